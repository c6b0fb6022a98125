//! The report's cost property: for every report shape (see [`crate::recordings`]), recordings
//! four times larger cost `tooltap report` at most about four times the work, its page stays
//! within `--max-page-bytes` plus the page's fixed part, and the process's peak memory stays
//! within what the report holds.
//!
//! Work is measured as the engine's is (the thread's CPU time, the best of a few runs, against
//! [`crate::CPU_GROWTH`]) over `report::collect` and `report::write_page`, the page written
//! to a sink that counts its bytes. Memory is measured in child processes (this binary
//! again), which run the larger case once with the default page budget (every view held) and
//! once with one far below what the case would fill (views cut and left out), so both the
//! budget and the memory it bounds are attacked.
//!
//! What the report holds at its peak, and so the memory bound: the page's data (the views, and
//! the tables of distinct tool lists and pointers, together at most the page budget as JSON),
//! one input file's bytes, the recording parsed from them and the fragments cut from it
//! ([`HELD_FACTOR`] times their size: a parsed tree and a `Vec` grown by doubling take a few
//! times their JSON), and the engine's work: on that one recording, and the compiled schemas
//! it caches across recordings, each bounded by what the engine accounts for
//! ([`crate::UNACCOUNTED_FACTOR`] times `Exchange::reassembly_bytes`, at most
//! `max_reassembled`, and `SchemaCache::bytes`, at most its byte bound, as the engine's own
//! property allows); all above the peak of the same shape at size 1, plus [`SLACK_BYTES`].

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tooltap::engine::{EngineConfig, Exchange, RequestParts, ResponseHead, SchemaCache};
use tooltap::interop::files::each_recording;
use tooltap::report::{ReportArgs, ReportData, bound, collect, write_page};

use crate::recordings::{REPORT_SHAPES, ReportShape, report_shape};
use crate::{
    CPU_FLOOR, CPU_GROWTH, CPU_TICK, UNACCOUNTED_FACTOR, child_measured, measured_field,
    status_bytes, thread_cpu, verbose,
};

/// What the memory bound allows per byte the report holds.
const HELD_FACTOR: usize = 8;

/// What the memory bound allows beyond the same shape at size 1 (whose peak holds what any
/// run sets up once: the harness, the allocator's arenas, the schema compiler's tables).
const SLACK_BYTES: u64 = 2 * 1024 * 1024;

/// The small page budget: below what every larger case fills.
const SMALL_BUDGET: u64 = 64 * 1024;

/// A folder of recordings, removed when dropped.
struct Folder(PathBuf);

impl Folder {
    fn new(shape: &ReportShape, n: usize) -> Folder {
        let dir = std::env::temp_dir().join(format!(
            "engine-cost-report-{}-{}-{n}",
            std::process::id(),
            shape.name
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("recordings folder");
        (shape.write)(&dir, n);
        Folder(dir)
    }

    /// The largest file in it, in bytes.
    fn largest_file(&self) -> u64 {
        std::fs::read_dir(&self.0)
            .expect("recordings folder")
            .filter_map(|entry| entry.ok()?.metadata().ok())
            .map(|meta| meta.len())
            .max()
            .unwrap_or(0)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A writer that only counts.
#[derive(Default)]
struct Counted(u64);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn args(dir: &Path, max_page_bytes: u64) -> ReportArgs {
    ReportArgs {
        paths: vec![dir.to_path_buf()],
        output: PathBuf::from("unused.html"),
        severity: None,
        docs_base: String::new(),
        max_exchanges: 20_000,
        max_shown_bytes: bound::DEFAULT_MAX_SHOWN_BYTES,
        max_page_bytes,
    }
}

/// Collects and writes the page; returns its data and its size.
fn report(dir: &Path, max_page_bytes: u64) -> (ReportData, u64) {
    let data = collect(&args(dir, max_page_bytes));
    let mut page = Counted::default();
    write_page(&data, &mut page).expect("page written");
    (data, page.0)
}

/// The page of no exchange: the shell, stylesheet, script and the data's fixed fields.
fn fixed_page_bytes() -> u64 {
    let empty =
        std::env::temp_dir().join(format!("engine-cost-report-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("empty folder");
    let (_, bytes) = report(&empty, bound::DEFAULT_MAX_PAGE_BYTES);
    let _ = std::fs::remove_dir_all(&empty);
    bytes
}

/// What the page may hold beyond its budget and its fixed part: the commas between the
/// exchanges and table entries (not part of any one's size), and the page's own counts.
fn page_slack(data: &ReportData) -> u64 {
    (data.exchanges.len() + 2) as u64 + 1024
}

/// The best CPU time of `runs` runs of the report over `dir`, with the last run's data and
/// page size.
fn report_cpu(dir: &Path, runs: usize) -> (Duration, ReportData, u64) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let started = thread_cpu();
        let (data, page) = report(dir, bound::DEFAULT_MAX_PAGE_BYTES);
        best = best.min(thread_cpu().saturating_sub(started));
        last = Some((data, page));
    }
    let (data, page) = last.expect("at least one run");
    (best, data, page)
}

/// What the engine accounts for while judging the recordings under `dir`, fed as
/// `check::checked::engine_report` feeds them: the most any one stream's reassembly held
/// (`Exchange::reassembly_bytes`), and what the schema cache shared by all of them holds at the
/// end (`SchemaCache::bytes`, bounded by its count and bytes).
fn engine_accounted(dir: &Path) -> (usize, usize) {
    let engine = std::sync::Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let mut most = 0;
    let mut buffer = Vec::new();
    for entry in std::fs::read_dir(dir).expect("recordings folder") {
        let path = entry.expect("entry").path();
        each_recording(&path, u64::MAX, &mut buffer, |recording| {
            let recording = recording.expect("recording reads");
            let meta = &recording.meta;
            let request = meta.request.body.bytes().unwrap_or_default();
            let target = meta.target();
            let parts = RequestParts {
                body: &request,
                path: Some(&target),
                ..RequestParts::default()
            };
            let mut exchange = Exchange::start(&engine, &cache, meta.dialect(), parts);
            let headers = meta.response.headers.iter();
            exchange.response_head(ResponseHead::from_headers(
                meta.response.status,
                headers.map(|(name, value)| (name.as_str(), value.as_str())),
            ));
            for frame in &recording.frames {
                exchange.feed(&frame.bytes);
                most = most.max(exchange.reassembly_bytes());
            }
            // Judging a buffered body compiles what it lists (MCP's tools/list) into the cache.
            exchange.finish(tooltap::engine::BodyEnd::Complete);
        });
    }
    (most, cache.bytes())
}

const CHILD_CASE: &str = "ENGINE_COST_REPORT_CASE";

/// In a child process: writes the report case named by the environment (`shape/n/budget`),
/// reports on it once with that page budget, and prints its peak resident bytes above those
/// before it began. A no-op in the ordinary test run.
#[test]
fn child_measures_one_report_case() {
    let Ok(name) = std::env::var(CHILD_CASE) else {
        return;
    };
    let mut parts = name.split('/');
    let (Some(shape), Some(n), Some(budget)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("bad case {name}");
    };
    let folder = Folder::new(report_shape(shape), n.parse().expect("n"));
    let largest = folder.largest_file();
    let before = status_bytes("VmRSS:");
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (data, page) = report(&folder.0, budget.parse().expect("budget"));
    let peak = status_bytes("VmHWM:").saturating_sub(before);
    println!(
        "MEASURED peak={peak} page={page} largest={largest} slack={} shown={} without_detail={} left_out={} conversations_unjudged={} most_held={}",
        page_slack(&data),
        data.exchanges.len(),
        data.cut.without_detail,
        data.cut.left_out,
        data.cut.conversations_unjudged,
        data.cut.most_held
    );
}

/// What a child measured.
struct Measured {
    peak: u64,
    page: u64,
    largest: u64,
    slack: u64,
    line: String,
}

fn measure_child(shape: &ReportShape, n: usize, budget: u64) -> Measured {
    let line = child_measured(
        "report::child_measures_one_report_case",
        &[(CHILD_CASE, format!("{}/{n}/{budget}", shape.name))],
    );
    let field = |key: &str| -> u64 { measured_field(&line, key).parse().unwrap_or(0) };
    Measured {
        peak: field("peak"),
        page: field("page"),
        largest: field("largest"),
        slack: field("slack"),
        line: line.clone(),
    }
}

/// Runs the report shapes whose name starts with `prefix` at n and 4n; returns what failed.
fn check_shapes(prefix: &str) -> Vec<String> {
    let fixed = fixed_page_bytes();
    let mut failures = Vec::new();
    for shape in REPORT_SHAPES.iter().filter(|s| s.name.starts_with(prefix)) {
        let name = format!("report {}", shape.name);
        let (small_dir, large_dir) = (Folder::new(shape, shape.n), Folder::new(shape, 4 * shape.n));
        // The best of three at n and of two at 4n, to keep the test short; the factor leaves
        // room for the noise one run less lets through.
        let (small, _, _) = report_cpu(&small_dir.0, 3);
        let (large, data, page) = report_cpu(&large_dir.0, 2);
        let growth = large.as_secs_f64() / small.max(CPU_TICK).as_secs_f64();
        if verbose() {
            eprintln!(
                "{name:<44} n={:<7} files={:>8}..{:>8} cpu={small:>7.1?}..{large:>7.1?} ({growth:.1}x) page={page} cut={:?}",
                shape.n,
                small_dir.largest_file(),
                large_dir.largest_file(),
                data.cut,
            );
        }
        if large > CPU_FLOOR && growth > CPU_GROWTH {
            failures.push(format!(
                "{name}: CPU {small:?} then {large:?} at 4x the size ({growth:.1}x)"
            ));
        }
        let (accounted, schemas) = engine_accounted(&large_dir.0);
        drop((small_dir, large_dir));
        let budget = bound::DEFAULT_MAX_PAGE_BYTES;
        if page > budget + fixed + page_slack(&data) {
            failures.push(format!(
                "{name}: a {page}-byte page past the default budget"
            ));
        }
        // Memory with the default budget (every view held) and with one the larger case
        // overfills (views cut and left out: nothing they took may stay).
        let baseline = measure_child(shape, 1, budget).peak;
        for budget in [budget, SMALL_BUDGET] {
            let measured = measure_child(shape, 4 * shape.n, budget);
            if verbose() {
                eprintln!(
                    "{name:<44} budget {budget:>8}: {} baseline={baseline} accounted={accounted} schemas={schemas}",
                    measured.line
                );
            }
            if measured.page > budget + fixed + measured.slack {
                failures.push(format!(
                    "{name}: a {}-byte page for a {budget}-byte budget ({fixed} fixed)",
                    measured.page
                ));
            }
            let allowed = baseline
                + HELD_FACTOR as u64 * (measured.page + measured.largest)
                + (UNACCOUNTED_FACTOR * (accounted + schemas)) as u64
                + SLACK_BYTES;
            if measured.peak > allowed {
                failures.push(format!(
                    "{name}, budget {budget}: {} bytes resident at the peak ({baseline} at size 1) for a {}-byte page, a {}-byte file and {} bytes the engine accounts for",
                    measured.peak, measured.page, measured.largest, accounted + schemas
                ));
            }
        }
    }
    failures
}

#[test]
fn chat_recordings_cost_the_report_linear_work_within_its_page_and_memory_bounds() {
    let failures = check_shapes("chat.");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn responses_recordings_cost_the_report_linear_work_within_its_page_and_memory_bounds() {
    let failures = check_shapes("responses.");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn anthropic_recordings_cost_the_report_linear_work_within_its_page_and_memory_bounds() {
    let failures = check_shapes("anthropic.");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn gemini_recordings_cost_the_report_linear_work_within_its_page_and_memory_bounds() {
    let failures = check_shapes("gemini.");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn ollama_recordings_cost_the_report_linear_work_within_its_page_and_memory_bounds() {
    let failures = check_shapes("ollama.");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bedrock_recordings_cost_the_report_linear_work_within_its_page_and_memory_bounds() {
    let failures = check_shapes("bedrock.");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn mcp_recordings_cost_the_report_linear_work_within_its_page_and_memory_bounds() {
    let failures = check_shapes("mcp.");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_dialect_has_its_report_shapes() {
    use tooltap::engine::Dialect;
    for dialect in Dialect::ALL {
        let prefix = format!("{}.", dialect.as_str());
        let count = REPORT_SHAPES
            .iter()
            .filter(|s| s.name.starts_with(&prefix))
            .count();
        assert!(count >= 4, "{dialect}: {count} report shapes");
    }
    for shape in REPORT_SHAPES {
        let dialect = shape.name.split('.').next().unwrap_or_default();
        assert!(
            Dialect::ALL.iter().any(|d| d.as_str() == dialect),
            "{}: not named after a dialect",
            shape.name
        );
    }
}

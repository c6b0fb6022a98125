//! The engine's cost property: for every dialect and every adversarial shape (see [`shapes`]),
//! an exchange four times larger costs at most about four times the work, and the memory the
//! engine holds stays within what it accounts for (`Exchange::held_bytes`, which the proxy
//! charges to `inspect.max_memory`) and within `max_reassembled`.
//!
//! Work is the thread's CPU time (`/proc/thread-self/schedstat`, not wall time), the best of
//! three runs, against a generous factor (linear work grows about 4x at 4x the size, quadratic
//! about 16x), so a busy machine does not fail it. Memory is measured in a child process (this
//! binary again, one case each): its peak resident set (`VmHWM`) above what it held before the
//! exchange began, so nothing another test allocates is counted. Each case is fed through
//! [`Exchange`], the entry point the proxy and `tooltap check` use.
//!
//! `tooltap report` has the same property over recordings of adversarial shapes, with its page
//! and its memory bounds: see [`report`].

// Test code: a failed setup is a failed test.
#![allow(clippy::expect_used, clippy::panic)]

mod gemini_request;
mod json_array;
mod ndjson;
mod recordings;
mod report;
mod shapes;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tooltap::engine::{
    BodyEnd, Completeness, Dialect, EngineConfig, Exchange, LimitKind, Report, RequestParts,
    ResponseHead, SchemaCache,
};

use shapes::{Case, shapes};
use tooltap::quirk::{LiveQuirks, QuirkId};

/// What one run of a case cost.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    cpu: Duration,
    /// The most the engine said it held (`Exchange::held_bytes`) after any feed.
    accounted: usize,
}

/// The CPU time this thread has used: the kernel's per-thread count, or wall time where it is
/// not available.
fn thread_cpu() -> Duration {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let fallback = || START.get_or_init(Instant::now).elapsed();
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok())
        .map_or_else(fallback, Duration::from_nanos)
}

/// A framer's body shape: its name, what builds it at size n, and n.
type FramingShape = (&'static str, fn(usize) -> Vec<u8>, usize);

/// The framers' cost property: for each shape, framing its body at n and 4n in 7-byte pushes
/// (`frame`: one run over the body in pushes of that size) costs, best of three runs, at most
/// [`CPU_GROWTH`] times more at 4n.
fn framing_grows_linearly(shapes: &[FramingShape], frame: fn(&[u8], usize)) {
    let cost = |body: &[u8]| {
        (0..3)
            .map(|_| {
                let before = thread_cpu();
                frame(body, 7);
                thread_cpu() - before
            })
            .min()
            .unwrap_or_default()
    };
    for &(name, make, n) in shapes {
        let (small_body, large_body) = (make(n), make(4 * n));
        let small = cost(&small_body);
        let large = cost(&large_body);
        let growth = large.as_secs_f64() / small.max(CPU_TICK).as_secs_f64();
        if verbose() {
            eprintln!(
                "{name}: {} bytes {small:?}, {} bytes {large:?} ({growth:.1}x)",
                small_body.len(),
                large_body.len()
            );
        }
        assert!(
            growth <= CPU_GROWTH,
            "{name}: {small:?} at n={n}, {large:?} at 4n ({growth:.1}x)"
        );
    }
}

fn run(case: &Case, config: &Arc<EngineConfig>) -> (Cost, Report) {
    let started = thread_cpu();
    let cache = SchemaCache::default();
    let request = RequestParts {
        body: &case.request,
        path: case.path,
        ..RequestParts::default()
    };
    let mut exchange = Exchange::start(config, &cache, case.dialect, request);
    exchange.response_head(ResponseHead {
        status: 200,
        content_type: Some(case.content_type.to_owned()),
        content_encoding: None,
        headers: Vec::new(),
    });
    let mut accounted = exchange.reassembly_bytes();
    for frame in &case.frames {
        exchange.feed(frame);
        accounted = accounted.max(exchange.reassembly_bytes());
    }
    let report = exchange.finish(BodyEnd::Complete);
    let cpu = thread_cpu().saturating_sub(started);
    (Cost { cpu, accounted }, report)
}

/// The best CPU time of three runs.
fn measure(case: &Case, config: &Arc<EngineConfig>) -> (Cost, Completeness) {
    let (mut best, report) = run(case, config);
    for _ in 0..2 {
        best.cpu = best.cpu.min(run(case, config).0.cpu);
    }
    (best, report.completeness)
}

/// A `/proc/self/status` figure in bytes.
fn status_bytes(key: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

const CHILD_CASE: &str = "ENGINE_COST_CASE";
const CHILD_MAX_REASSEMBLED: &str = "ENGINE_COST_MAX_REASSEMBLED";

/// In a child process: runs the case named by the environment once and prints its peak
/// resident bytes above those before it began. A no-op in the ordinary test run.
#[test]
fn child_measures_one_case() {
    let Ok(name) = std::env::var(CHILD_CASE) else {
        return;
    };
    let mut parts = name.split('/');
    let (Some(dialect), Some(shape), Some(n)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("bad case {name}");
    };
    let dialect = Dialect::ALL
        .into_iter()
        .find(|d| d.as_str() == dialect)
        .expect("dialect");
    let shape = shapes(dialect)
        .iter()
        .find(|s| s.name == shape)
        .expect("shape");
    let mut config = EngineConfig::default();
    if let Some(max) = std::env::var(CHILD_MAX_REASSEMBLED)
        .ok()
        .and_then(|m| m.parse().ok())
    {
        config.max_reassembled = max;
    }
    let case = (shape.make)(n.parse().expect("n"));
    let before = status_bytes("VmRSS:");
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (cost, report) = run(&case, &Arc::new(config));
    let completeness = report.completeness;
    let peak = status_bytes("VmHWM:").saturating_sub(before);
    println!(
        "MEASURED peak={peak} accounted={} too_large={}",
        cost.accounted,
        matches!(
            completeness,
            Completeness::TooLarge {
                limit: LimitKind::Reassembled,
                ..
            }
        )
    );
}

/// What a child measured: peak resident bytes, the engine's accounted bytes, and whether the
/// exchange stopped at `max_reassembled`.
struct Resident {
    peak: usize,
    accounted: usize,
    too_large: bool,
}

/// Runs `test` of this binary in a child process with `env` and returns the line it printed
/// after `MEASURED `.
fn child_measured(test: &str, env: &[(&str, String)]) -> String {
    let output = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .envs(env.iter().map(|(key, value)| (key, value)))
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .find_map(|line| Some(line.split_once("MEASURED ")?.1.to_owned()))
        .unwrap_or_else(|| {
            panic!(
                "child said nothing: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
}

/// The value of `key=value` in a child's line; empty when absent.
fn measured_field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_default()
}

fn resident(dialect: Dialect, shape: &str, n: usize, max_reassembled: Option<usize>) -> Resident {
    let mut env = vec![(CHILD_CASE, format!("{}/{shape}/{n}", dialect.as_str()))];
    if let Some(max) = max_reassembled {
        env.push((CHILD_MAX_REASSEMBLED, max.to_string()));
    }
    let line = child_measured("child_measures_one_case", &env);
    let field = |key: &str| measured_field(&line, key);
    Resident {
        peak: field("peak").parse().unwrap_or(0),
        accounted: field("accounted").parse().unwrap_or(0),
        too_large: field("too_large") == "true",
    }
}

/// Work at 4n over work at n may be at most this (linear is about 4; quadratic about 16).
const CPU_GROWTH: f64 = 8.0;
/// The kernel counts a thread's CPU time by scheduler ticks: below this a figure says little,
/// so the smaller run counts as at least this and the larger is compared only above
/// [`CPU_FLOOR`].
const CPU_TICK: Duration = Duration::from_millis(10);
const CPU_FLOOR: Duration = Duration::from_millis(40);

/// What a process may hold beyond what the engine accounts for: a factor on its count
/// (allocator slack, a `Vec` grown by doubling) and a constant (the test harness's thread and
/// allocator arenas, the request's facts and compiled schemas, the report's fixed parts).
const UNACCOUNTED_FACTOR: usize = 3;
const UNACCOUNTED_BYTES: usize = 8 * 1024 * 1024;
/// What a shape's process may hold above the same shape's at size 1 (its floor: the binary,
/// the harness, the allocator's arenas, which vary from run to run and with the machine's
/// load), beyond [`UNACCOUNTED_FACTOR`] times the engine's count: transient copies of one event
/// (the framer's line, the event's data, its parse) that the count does not keep.
const ABOVE_FLOOR_BYTES: usize = 3 * 1024 * 1024;

fn verbose() -> bool {
    std::env::var_os("ENGINE_COST_PRINT").is_some()
}

/// Runs every shape of `dialect` at n and 4n; returns what failed.
fn check_dialect(dialect: Dialect) -> Vec<String> {
    let config = Arc::new(EngineConfig::default());
    // Work is measured on the whole case: a bound that stopped the larger one early would
    // hide how its cost grows.
    let unbounded = Arc::new(EngineConfig {
        max_reassembled: 1 << 30,
        ..EngineConfig::default()
    });
    let mut failures = Vec::new();
    for shape in shapes(dialect) {
        let name = format!("{dialect} {}", shape.name);
        let small_case = (shape.make)(shape.n);
        let large_case = (shape.make)(4 * shape.n);
        let (small, _) = measure(&small_case, &unbounded);
        let (large, completeness) = measure(&large_case, &unbounded);
        let cpu_growth = large.cpu.as_secs_f64() / small.cpu.max(CPU_TICK).as_secs_f64();
        if verbose() {
            eprintln!(
                "{name:<40} n={:<7} input={:>8}..{:>8} cpu={:>7.1?}..{:>7.1?} ({cpu_growth:.1}x) accounted={:>9} {completeness:?}",
                shape.n,
                small_case.input_bytes(),
                large_case.input_bytes(),
                small.cpu,
                large.cpu,
                large.accounted,
            );
        }
        if large.cpu > CPU_FLOOR && cpu_growth > CPU_GROWTH {
            failures.push(format!(
                "{name}: CPU {:?} then {:?} at 4x the size ({cpu_growth:.1}x)",
                small.cpu, large.cpu
            ));
        }
        if !shape.reassembles {
            continue;
        }
        let input = large_case.input_bytes();
        let floor = resident(dialect, shape.name, 1, None).peak;
        let memory = resident(dialect, shape.name, 4 * shape.n, None);
        if memory.accounted > config.max_reassembled + config.max_sse_line {
            failures.push(format!(
                "{name}: {} bytes accounted, past max_reassembled and one event",
                memory.accounted
            ));
        }
        if verbose() {
            eprintln!(
                "{name:<40} resident peak={} floor={floor} ({:.1} per input byte above it) for {} accounted",
                memory.peak,
                memory.peak.saturating_sub(floor) as f64 / input as f64,
                memory.accounted
            );
        }
        let allowed = floor + UNACCOUNTED_FACTOR * memory.accounted.max(input) + ABOVE_FLOOR_BYTES;
        if memory.peak > allowed {
            failures.push(format!(
                "{name}: {} bytes resident at the peak ({floor} at size 1) for {} accounted \
                 ({input} input bytes)",
                memory.peak, memory.accounted
            ));
        }
    }
    failures
}

/// The shape, a long stream of minimal `choices` entries: with a 1 MiB bound the
/// exchange stops `too_large` (never a violation) and its resident memory stays near the bound,
/// however long the stream.
#[test]
fn many_tiny_choices_stop_at_the_reassembly_bound_with_memory_near_it() {
    let bound = 1024 * 1024;
    for n in [20_000, 80_000] {
        let memory = resident(Dialect::Chat, "many_choices", n, Some(bound));
        assert!(memory.too_large, "n={n}: not stopped at the bound");
        assert!(
            memory.accounted <= bound + 16 * 1024,
            "n={n}: {} accounted",
            memory.accounted
        );
        assert!(
            memory.peak <= UNACCOUNTED_FACTOR * bound + UNACCOUNTED_BYTES,
            "n={n}: {} bytes resident at the peak",
            memory.peak
        );
    }
    let case = (shapes(Dialect::Chat)
        .iter()
        .find(|s| s.name == "many_choices")
        .expect("shape")
        .make)(20_000);
    let config = Arc::new(EngineConfig {
        max_reassembled: bound,
        ..EngineConfig::default()
    });
    let (_, report) = run(&case, &config);
    assert_eq!(
        report.completeness,
        Completeness::TooLarge {
            limit: LimitKind::Reassembled,
            bytes: bound
        }
    );
    assert!(
        report.violations.is_empty(),
        "a bound is never a violation: {:?}",
        report.violations
    );
}

#[test]
fn chat_shapes_cost_linear_work_and_stay_within_accounted_memory() {
    let failures = check_dialect(Dialect::Chat);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn responses_shapes_cost_linear_work_and_stay_within_accounted_memory() {
    let failures = check_dialect(Dialect::Responses);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn anthropic_shapes_cost_linear_work_and_stay_within_accounted_memory() {
    let failures = check_dialect(Dialect::Anthropic);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn gemini_shapes_cost_linear_work_and_stay_within_accounted_memory() {
    let failures = check_dialect(Dialect::Gemini);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn ollama_shapes_cost_linear_work_and_stay_within_accounted_memory() {
    let failures = check_dialect(Dialect::Ollama);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bedrock_shapes_cost_linear_work_and_stay_within_accounted_memory() {
    let failures = check_dialect(Dialect::Bedrock);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn mcp_shapes_cost_linear_work_and_stay_within_accounted_memory() {
    let failures = check_dialect(Dialect::Mcp);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// What `--inject` does to a live stream, for every quirk of the dialect: the frames through
/// [`LiveQuirks`] (each event parsed and rewritten, per-call state kept). Returns its CPU time.
fn quirk_cpu(quirk: QuirkId, case: &Case) -> Option<Duration> {
    let head = ResponseHead {
        status: 200,
        content_type: Some(case.content_type.to_owned()),
        content_encoding: None,
        headers: Vec::new(),
    };
    let started = thread_cpu();
    let mut live = LiveQuirks::new(&[quirk], case.dialect, &case.request, &head, 1 << 30).ok()?;
    for frame in &case.frames {
        let _ = live.push(frame);
    }
    let _ = live.finish();
    Some(thread_cpu().saturating_sub(started))
}

/// Every quirk of every dialect over the shapes that multiply calls, blocks, items and
/// fragments, at n/2 and 2n (one run each, to keep the test short): its work grows linearly
/// too.
#[test]
fn every_quirk_costs_linear_work_on_adversarial_streams() {
    let mut failures = Vec::new();
    for dialect in Dialect::ALL {
        for shape in shapes(dialect).iter().filter(|s| s.quirked) {
            let half = shape.n / 2;
            let (small_case, large_case) = ((shape.make)(half), (shape.make)(4 * half));
            for quirk in QuirkId::ALL.into_iter().filter(|q| q.dialect() == dialect) {
                let cpu = |case: &Case| quirk_cpu(quirk, case).unwrap_or_default();
                let (mut small, mut large) = (cpu(&small_case), cpu(&large_case));
                let growth_of = |small: Duration, large: Duration| {
                    large.as_secs_f64() / small.max(CPU_TICK).as_secs_f64()
                };
                // One run each keeps the test short; a pair that looks superlinear is measured
                // twice more and judged on each size's least CPU, so one preempted or
                // cache-cold run on a loaded machine is not taken for the quirk's cost.
                for _ in 0..2 {
                    if large <= CPU_FLOOR || growth_of(small, large) <= CPU_GROWTH {
                        break;
                    }
                    small = small.min(cpu(&small_case));
                    large = large.min(cpu(&large_case));
                }
                let growth = growth_of(small, large);
                if verbose() {
                    eprintln!(
                        "{dialect} {} {quirk}: {small:.1?}..{large:.1?} ({growth:.1}x)",
                        shape.name
                    );
                }
                if large > CPU_FLOOR && growth > CPU_GROWTH {
                    failures.push(format!(
                        "{dialect} {} under {quirk}: CPU {small:?} then {large:?} ({growth:.1}x)",
                        shape.name
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_dialect_has_its_shapes() {
    for dialect in Dialect::ALL {
        assert!(shapes(dialect).len() >= 6, "{dialect}: too few shapes");
    }
}

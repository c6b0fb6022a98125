//! Running the engine over recordings, in parallel: one [`Checked`] per exchange (each by
//! [`engine_report`]).
//!
//! Input: recording files (read one recording at a time with
//! [`crate::interop::files::each_recording`]: a segment file holds many) or a [`Capture`].
//! Output: [`Item`]s in input order, a segment's in file order. Workers are scoped std threads
//! pulling the next file index from an atomic counter; only the verdicts are kept, and a file
//! is judged one recording at a time, so memory stays at one file's bytes and one recording
//! per worker. A progress line is drawn on the given terminal writer while they run.

use std::io::Write;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::checked::{Checked, Item, engine_report};
use super::conversations::{Pending, settle_all};
use super::inputs::Capture;
use crate::engine::{BodyEnd, EngineConfig, Exchange, Report, RequestParts, SchemaCache};
use crate::interop::files::each_recording;
use crate::record::Recording;

/// Judges every file, `jobs` at a time (default: the available parallelism); a file larger than
/// `max_bytes` is unreadable. Also returns, in file order, a note for each file skipped as
/// holding no recording or imported from another tool's format ([`crate::interop::files::FileRead::note`]).
pub fn run_all(
    files: &[PathBuf],
    max_bytes: u64,
    engine: &Arc<EngineConfig>,
    jobs: Option<NonZeroUsize>,
    progress: Option<&mut dyn Write>,
) -> (Vec<Item>, Vec<String>) {
    let cache = SchemaCache::default();
    let workers = jobs
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get)
        .min(files.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let mut results: Vec<(usize, FileVerdicts)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    let mut buffer = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(file) = files.get(index) else {
                            break;
                        };
                        mine.push((
                            index,
                            judge_file(file, max_bytes, &mut buffer, engine, &cache),
                        ));
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    mine
                })
            })
            .collect();
        if let Some(out) = progress {
            draw_progress(out, &done, files.len());
        }
        handles
            .into_iter()
            // A panicking worker's files have no result; they are reported below.
            .flat_map(|handle| handle.join().unwrap_or_default())
            .collect()
    });
    results.sort_by_key(|(index, _)| *index);
    // A file whose worker panicked has no result: say so rather than pass it silently.
    let mut items = Vec::with_capacity(files.len());
    let mut notes = Vec::new();
    let mut mcp = Vec::new();
    let mut results = results.into_iter().peekable();
    for (index, file) in files.iter().enumerate() {
        match results.next_if(|(i, _)| *i == index) {
            Some((_, verdicts)) => {
                let offset = items.len();
                mcp.extend(verdicts.mcp.into_iter().map(|mut pending| {
                    pending.index += offset;
                    pending
                }));
                items.extend(verdicts.items);
                notes.extend(verdicts.skipped);
            }
            None => items.push(Item::Unreadable(format!(
                "{}: the check failed internally",
                file.display()
            ))),
        }
    }
    settle_all(&mut items, mcp, engine);
    (items, notes)
}

/// What one file gave: its items, or the note saying why it gave none; and its MCP exchanges
/// for the conversation pass (`index` within `items`).
struct FileVerdicts {
    items: Vec<Item>,
    skipped: Option<String>,
    mcp: Vec<Pending>,
}

fn draw_progress(out: &mut dyn Write, done: &AtomicUsize, total: usize) {
    loop {
        let finished = done.load(Ordering::Relaxed);
        let _ = write!(out, "\rchecked {finished}/{total} recordings");
        let _ = out.flush();
        if finished >= total {
            let _ = writeln!(out);
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One item per recording the file holds (many for a segment), in file order.
fn judge_file(
    file: &std::path::Path,
    max_bytes: u64,
    buffer: &mut Vec<u8>,
    engine: &Arc<EngineConfig>,
    cache: &SchemaCache,
) -> FileVerdicts {
    let mut items = Vec::new();
    let mut mcp = Vec::new();
    let read = each_recording(file, max_bytes, buffer, |read| {
        items.push(match read {
            Ok(recording) => {
                let report = engine_report(&recording, engine, cache);
                mcp.extend(Pending::of(items.len(), &recording, &report));
                Item::Checked(Box::new(verdict(recording, report)))
            }
            Err(error) => Item::Unreadable(error.to_string()),
        });
    });
    FileVerdicts {
        items,
        skipped: read.note(file),
        mcp,
    }
}

/// The verdict of one recording from its engine report; the recording's names move into it.
fn verdict(recording: Recording, report: Report) -> Checked {
    let injected = recording.meta.injected_quirks();
    let live = crate::interop::has_live_verdict(&recording);
    let Recording {
        path, meta, end, ..
    } = recording;
    Checked {
        source: path
            .into_os_string()
            .into_string()
            .unwrap_or_else(|path| path.to_string_lossy().into_owned()),
        id: Some(meta.id),
        route: Some(meta.route),
        method: Some(meta.method),
        path: Some(meta.path),
        started: Some(meta.started),
        model: report.request.model,
        outcome: end.as_ref().map(|end| end.outcome),
        live_violations: end
            .as_ref()
            .filter(|_| live)
            .map(|end| end.violations.len()),
        injected,
        violations: report.violations,
        completeness: report.completeness,
    }
}

/// Judges a capture made elsewhere.
pub fn capture(capture: &Capture, engine: &Arc<EngineConfig>) -> Item {
    let cache = SchemaCache::default();
    let parts = RequestParts {
        body: &capture.request,
        path: capture.path.as_deref(),
        ..RequestParts::default()
    };
    let mut exchange = Exchange::start(engine, &cache, capture.dialect, parts);
    exchange.response_head(capture.head.clone());
    for frame in &capture.frames {
        exchange.feed(frame);
    }
    let report = exchange.finish(BodyEnd::Complete);
    Item::Checked(Box::new(Checked {
        source: capture.source.clone(),
        id: None,
        route: None,
        method: None,
        path: None,
        started: None,
        model: None,
        outcome: None,
        live_violations: None,
        injected: Vec::new(),
        violations: report.violations,
        completeness: report.completeness,
    }))
}

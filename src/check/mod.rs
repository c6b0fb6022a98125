//! `tooltap check`: re-judge recorded exchanges offline with the current contract engine.
//!
//! Input: [`CheckArgs`] (recording files and folders, or a `--request`/`--response` capture
//! made elsewhere). Each recording is read with [`crate::record::read`] and its frames are fed
//! to a fresh [`crate::engine::Exchange`] one `feed` per recorded frame, so `seq` numbers match
//! the live ones; a newer tooltap thereby re-judges old traffic. Output: a report on `stdout`
//! (human, JSON or JUnit), problems with inputs on `stderr` (naming file and line), and an exit
//! code: 0 clean, 1 a violation at or above `--fail-on`, 2 usage errors or unreadable input.
//! [`run`] takes its writers as arguments so tests drive it without spawning the binary.

mod args;
pub(crate) mod checked;
pub mod conversations;
pub(crate) mod inputs;
pub(crate) mod judge;
mod json_report;
mod junit;
mod output;

use std::io::{IsTerminal, Write};

pub use args::{CheckArgs, FailOn, OutputFormat};
pub use checked::{Checked, Item};

use crate::engine::Severity;

/// Exit code: nothing at or above the threshold.
pub const EXIT_CLEAN: u8 = 0;
/// Exit code: a violation at or above `--fail-on`.
pub const EXIT_VIOLATIONS: u8 = 1;
/// Exit code: bad usage or an input that could not be read.
pub const EXIT_USAGE: u8 = 2;

/// Runs the check; progress goes to `stderr` only when the process's stderr is a terminal.
pub fn run(args: &CheckArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> u8 {
    let progress = std::io::stderr().is_terminal();
    run_with_progress(args, stdout, stderr, progress)
}

/// [`run`] with the progress line chosen by the caller.
pub fn run_with_progress(
    args: &CheckArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    progress: bool,
) -> u8 {
    if args.paths.is_empty() && args.request.is_none() {
        let _ = writeln!(
            stderr,
            "tooltap check: give recording files or folders, or --request and --response"
        );
        return EXIT_USAGE;
    }
    let (files, mut problems) = crate::interop::files::collect(&args.paths, args.max_input_bytes);
    let engine = args.engine_config();
    let (mut items, skipped) = judge::run_all(
        &files,
        args.max_input_bytes,
        &engine,
        args.jobs,
        progress.then_some(&mut *stderr),
    );
    if let (Some(request), Some(response)) = (&args.request, &args.response) {
        match inputs::capture(args, request, response) {
            Ok(capture) => items.push(judge::capture(&capture, &engine)),
            Err(message) => problems.push(message),
        }
    }
    items.extend(problems.into_iter().map(Item::Unreadable));
    // One buffer for the whole report: `stdout` is line-buffered, and the pretty JSON report
    // has a dozen lines per exchange, each a write system call otherwise.
    let mut buffered = std::io::BufWriter::with_capacity(64 * 1024, &mut *stdout);
    let written = match args.format {
        OutputFormat::Human => output::human(&items, &mut buffered),
        OutputFormat::Json => json_report::write(&items, &mut buffered),
        OutputFormat::Junit => junit::write(&items, args.fail_on, &mut buffered),
    }
    .and_then(|()| buffered.flush());
    drop(buffered);
    for note in &skipped {
        let _ = writeln!(stderr, "tooltap check: note: {}", output::printable(note));
    }
    for item in &items {
        if let Item::Unreadable(message) = item {
            let _ = writeln!(stderr, "tooltap check: {}", output::printable(message));
        }
    }
    if let Err(error) = written.and_then(|()| stdout.flush()) {
        let _ = writeln!(stderr, "tooltap check: cannot write the report: {error}");
        return EXIT_USAGE;
    }
    if items.is_empty() && !args.allow_empty {
        let shown: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
        let _ = writeln!(
            stderr,
            "tooltap check: no recording found in {}: nothing was checked (wrong folder? \
             --allow-empty accepts this)",
            shown.join(", ")
        );
        return EXIT_USAGE;
    }
    exit_code(&items, args.fail_on)
}

/// Unreadable input beats violations: a CI job must not pass on files it could not judge.
fn exit_code(items: &[Item], fail_on: FailOn) -> u8 {
    if items.iter().any(|i| matches!(i, Item::Unreadable(_))) {
        return EXIT_USAGE;
    }
    let failing = items.iter().any(|item| match item {
        Item::Checked(checked) => checked.violations.iter().any(|v| fail_on.fails(v.severity)),
        Item::Unreadable(_) => false,
    });
    if failing { EXIT_VIOLATIONS } else { EXIT_CLEAN }
}

impl FailOn {
    /// Whether a violation of this severity fails the run.
    pub fn fails(self, severity: Severity) -> bool {
        match (self, severity) {
            (FailOn::Warning, _) | (FailOn::Error, Severity::Error) => true,
            (FailOn::Error, Severity::Warning) => false,
        }
    }
}

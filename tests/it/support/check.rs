//! `tooltap check --format json` over a folder, in-process through the library, as the tests
//! that compare live verdicts with offline ones run it.

use std::path::Path;

use clap::Parser;
use serde_json::Value;
use tooltap::cli::{Cli, Command};

/// What one check run gave: its exit code, its parsed JSON report and its stderr.
pub struct Checked {
    pub code: u8,
    pub report: Value,
    pub stderr: String,
}

pub fn check_json(dir: &Path) -> Checked {
    let argv = [
        "tooltap",
        "check",
        "--format",
        "json",
        dir.to_str().expect("utf-8"),
    ];
    let Command::Check(args) = Cli::try_parse_from(argv).expect("parses").command else {
        panic!("not check");
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tooltap::check::run_with_progress(&args, &mut out, &mut err, false);
    let stderr = String::from_utf8_lossy(&err).into_owned();
    let report = serde_json::from_slice(&out)
        .unwrap_or_else(|error| panic!("check printed no JSON ({error}): {stderr}"));
    Checked {
        code,
        report,
        stderr,
    }
}

//! vcrpy cassettes and HAR files, in and out (issue 36): tooltap's own recordings exported and
//! read back give the same verdicts and bytes ([`round_trip`]); broken foreign files are named
//! and lose nothing else; and real tools judge both directions ([`vcrpy`]: cassettes written
//! by vcrpy itself over the openai and anthropic SDKs, tooltap's cassettes replayed by vcrpy,
//! tooltap's HAR read by haralyzer).

mod by_cassette;
mod round_trip;
mod vcrpy;

use std::path::Path;

use clap::Parser;
use tooltap::cli::{Cli, Command};

/// Runs `tooltap export ARGS` in-process; (exit code, stderr).
pub fn export(argv: &[&str]) -> (u8, String) {
    let full = ["tooltap", "export"].iter().chain(argv.iter());
    let Command::Export(args) = Cli::try_parse_from(full).expect("parses").command else {
        panic!("not export");
    };
    let mut err = Vec::new();
    let code = tooltap::interop::export::run(&args, &mut err);
    (code, String::from_utf8_lossy(&err).into_owned())
}

pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

//! `tooltap check --format json` over a folder, in-process through the library, as the tests
//! that compare live verdicts with offline ones run it.

use std::collections::BTreeMap;
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

/// Rule ids per exchange id, sorted, from a violations file (exchanges with none are absent);
/// every line must name `dialect`.
pub fn live_verdicts(violations: &Path, dialect: &str) -> BTreeMap<String, Vec<String>> {
    let mut verdicts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in super::temp::json_lines(violations) {
        assert_eq!(line["dialect"], dialect, "{line}");
        let id = line["exchange"].as_str().expect("exchange id").to_owned();
        let rule = line["rule"].as_str().expect("rule").to_owned();
        verdicts.entry(id).or_default().push(rule);
    }
    verdicts.values_mut().for_each(|rules| rules.sort());
    verdicts
}

/// The same from `tooltap check`'s JSON report of the recordings.
pub fn offline_verdicts(report: &Value) -> BTreeMap<String, Vec<String>> {
    let exchanges = report["exchanges"].as_array().expect("exchanges");
    exchanges
        .iter()
        .filter_map(|exchange| {
            let mut rules: Vec<String> = exchange["violations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v["rule"].as_str().expect("rule").to_owned())
                .collect();
            rules.sort();
            let id = exchange["id"].as_str().expect("id").to_owned();
            (!rules.is_empty()).then_some((id, rules))
        })
        .collect()
}

/// `tooltap check` over `recordings` judges them as live did: exit code `code`, `exchanges`
/// exchanges (where given), and the same rule ids per exchange as `live`. `what` names the run
/// in the failure messages.
pub fn assert_check_judges_as_live(
    recordings: &Path,
    live: &BTreeMap<String, Vec<String>>,
    code: u8,
    exchanges: Option<u64>,
    what: &str,
) {
    let checked = check_json(recordings);
    assert_eq!(checked.code, code, "{what}: {}", checked.stderr);
    if let Some(exchanges) = exchanges {
        assert_eq!(
            checked.report["exchanges"]
                .as_array()
                .map(|e| e.len() as u64),
            Some(exchanges),
            "{what}"
        );
    }
    assert_eq!(
        &offline_verdicts(&checked.report),
        live,
        "{what}: check judged the recordings otherwise than live"
    );
}

/// The violations in a violations file at error severity.
pub fn error_lines(violations: &Path) -> Vec<Value> {
    super::temp::json_lines(violations)
        .into_iter()
        .filter(|line| line["severity"] == "error")
        .collect()
}

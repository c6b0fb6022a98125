//! Real clients against `tooltap replay` serving `recordings/examples/`: the seed article's
//! vitest suite (openai npm SDK) passes, and fails on its "arguments is a string" assertion with
//! the broken provider's recordings; the openai Python SDK's own stream accumulator rebuilds the
//! parallel tool calls exactly as tooltap's engine does.
//!
//! Where the clients are: `TOOLTAP_TEST_SEED_SUITE` (the seed suite with `node_modules`) and
//! `TOOLTAP_TEST_PYTHON` (a python with `openai`), both set by `scripts/test`; without them the
//! repository's own `tests/clients/seed-suite` and `.deps/venv/bin/python`. A missing client is
//! a failure naming `scripts/test`, never a silent pass.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::replay::examples::judge;
use crate::replay::support::{TempDir, repo, settings, start};
use crate::support::clients::{python, python_script};

const CLIENT_LIMIT: Duration = Duration::from_secs(120);

pub fn seed_suite() -> PathBuf {
    let dir = std::env::var_os("TOOLTAP_TEST_SEED_SUITE")
        .map_or_else(|| repo().join("tests/clients/seed-suite"), PathBuf::from);
    assert!(
        dir.join("node_modules/.bin/vitest").exists(),
        "the seed suite's node_modules are missing in {}: run scripts/test (it runs npm ci there \
         and sets TOOLTAP_TEST_SEED_SUITE)",
        dir.display()
    );
    dir
}

/// Run `command` to its end without blocking the runtime (the replay server shares it), with
/// stdout and stderr in one file (a pipe could fill up while nobody reads it).
pub async fn run(mut command: Command, tag: &str) -> (ExitStatus, String) {
    let out = TempDir::new(tag);
    let log = out.path().join("output.txt");
    let file = std::fs::File::create(&log).expect("output file");
    let err = file.try_clone().expect("clone output file");
    command.stdin(Stdio::null()).stdout(file).stderr(err);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > CLIENT_LIMIT {
            let _ = child.kill();
            panic!("{command:?} still running after {CLIENT_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    (status, std::fs::read_to_string(&log).unwrap_or_default())
}

pub async fn vitest(dir: &Path, base_url: &str, model: &str) -> (ExitStatus, String) {
    let mut command = Command::new(dir.join("node_modules/.bin/vitest"));
    command
        .arg("run")
        .current_dir(dir)
        .env("TARGET_URL", base_url)
        .env("TARGET_KEY", "test")
        .env("TARGET_MODEL", model)
        .env("CI", "1")
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0");
    run(command, "vitest").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_suite_passes_against_the_examples_and_fails_on_a_helpful_provider() {
    let dir = seed_suite();
    let replay = start(&settings(&repo().join("recordings/examples"))).await;
    let base_url = format!("http://{}/v1", replay.local_addr());

    let (status, output) = vitest(&dir, &base_url, "gpt-4o-mini").await;
    assert!(
        status.success(),
        "seed suite failed against the clean examples:\n{output}"
    );
    assert!(output.contains("Tests  2 passed (2)"), "{output}");

    let (status, output) = vitest(&dir, &base_url, "broken-args-as-object").await;
    assert!(
        !status.success(),
        "seed suite passed against arguments-as-object:\n{output}"
    );
    assert_args_as_object_failure(&output);
}

/// The seed suite's output when tool-call arguments come as an object: the forced-call test
/// fails on the arguments' type, and nothing else fails.
pub fn assert_args_as_object_failure(output: &str) {
    for expected in [
        "FAIL  contract.test.ts > tool call contract > returns a documented tool_call when one is forced",
        "expected 'object' to be 'string'",
        "Tests  1 failed | 1 passed (2)",
    ] {
        assert!(
            output.contains(expected),
            "{expected:?} missing from:\n{output}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_reassembles_parallel_calls_as_tooltap_does() {
    let python = python();
    // No ignored fields at all: the SDK's stream helper must send exactly the recorded body.
    let mut exact = settings(&repo().join("recordings/examples"));
    exact.rules = tooltap::replay::MatchRules::new(false, &[]).expect("rules");
    let replay = start(&exact).await;
    let mut command = Command::new(python);
    command
        .arg(python_script("replay_parallel.py"))
        .arg(format!("http://{}/v1", replay.local_addr()))
        .arg("gpt-4o-mini");
    let (status, output) = run(command, "python").await;
    assert!(status.success(), "the Python SDK run failed:\n{output}");
    let sdk: Value =
        serde_json::from_str(output.trim()).unwrap_or_else(|e| panic!("{e}: {output}"));

    let recording =
        tooltap::record::read_file(&repo().join("recordings/examples/seed/required-stream.jsonl"))
            .expect("example parses");
    let report = judge(&recording);
    let choice = &report.choices[0];
    let ours = json!({
        "finish_reason": choice.finish_reason,
        "tool_calls": choice.tool_calls.iter().map(|call| json!({
            "id": call.id, "name": call.name, "arguments": call.arguments,
        })).collect::<Vec<_>>(),
        "usage": report.usage.as_ref().map(|u| u.value()["total_tokens"].clone()),
    });
    assert_eq!(sdk, ours);
    assert_eq!(sdk["tool_calls"].as_array().map(Vec::len), Some(2), "{sdk}");
}

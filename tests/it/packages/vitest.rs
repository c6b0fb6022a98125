//! The npm packages and `tooltap/vitest`: both tarballs installed with `npm install --offline`
//! from the files (the launcher finds the executable in the platform package), vitest and the
//! openai and @anthropic-ai/sdk Node SDKs linked in from the folders `scripts/test` installs,
//! run `package-suites/vitest` against aimock in `once` mode, then offline in `none` mode; a
//! never-recorded test and a recorded violation fail the run, named, and the violation fails
//! its own test (vitest's JSON report: that test failed naming the rule, its neighbours passed),
//! whether tooltap records (the proxy's admin listener answers the verdicts) or replays. The
//! Vercel AI SDK (`ai`, `@ai-sdk/openai`, installed in the suite's folder) runs its own
//! two-turn tool loop through the same setup, recorded then replayed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{clear_inherited, copy_files, dist_file, run, suite};
use crate::support::TempDir;
use crate::support::aimock::{aimock_dir, start_aimock_with};

/// The seed suite's folder, whose node_modules hold vitest and the openai Node SDK.
fn seed_suite() -> PathBuf {
    let dir = std::env::var_os("TOOLTAP_TEST_SEED_SUITE").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/seed-suite"),
        PathBuf::from,
    );
    assert!(
        dir.join("node_modules/vitest/package.json").exists(),
        "vitest is missing in {}: run scripts/test (it runs npm ci there and sets \
         TOOLTAP_TEST_SEED_SUITE)",
        dir.display()
    );
    dir
}

/// The suite folder's node_modules, with the Vercel AI SDK (`ai`, `@ai-sdk/openai`).
fn ai_sdk() -> PathBuf {
    let modules = suite("vitest").join("node_modules");
    assert!(
        modules.join("ai/package.json").exists() && modules.join("@ai-sdk/openai").exists(),
        "the AI SDK is missing in {}: run scripts/test (it runs npm ci in \
         tests/clients/package-suites/vitest)",
        modules.display()
    );
    modules
}

/// A project with the suite's files and the two tarballs installed; the clients linked in.
async fn project(root: &Path) -> PathBuf {
    let dir = root.join("project");
    std::fs::create_dir_all(&dir).expect("project dir");
    copy_files(&suite("vitest"), &dir);
    // The suite folder's lockfile pins its own clients (linked below), not this project's.
    std::fs::remove_file(dir.join("package-lock.json")).expect("the suite's lockfile");
    std::fs::write(
        dir.join("package.json"),
        r#"{"name":"suite","private":true,"type":"module"}"#,
    )
    .expect("package.json");
    let mut install = tokio::process::Command::new("npm");
    install
        .current_dir(&dir)
        .args([
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .arg(dist_file("tooltap-linux-x64-gnu-", ".tgz"))
        .arg(dist_file("tooltap-", ".tgz"));
    let (out, text, seconds) = run(install).await;
    assert!(out.status.success(), "npm install of the tarballs: {text}");
    eprintln!("tarballs installed in {seconds:.1} s");
    let modules = dir.join("node_modules");
    let ai_sdk = ai_sdk();
    let links = [
        (seed_suite().join("node_modules/vitest"), "vitest"),
        (seed_suite().join("node_modules/openai"), "openai"),
        (
            aimock_dir().join("node_modules/@anthropic-ai/sdk"),
            "@anthropic-ai/sdk",
        ),
        (ai_sdk.join("ai"), "ai"),
        (ai_sdk.join("@ai-sdk/openai"), "@ai-sdk/openai"),
    ];
    for scope in ["@anthropic-ai", "@ai-sdk"] {
        std::fs::create_dir_all(modules.join(scope)).expect("scope dir");
    }
    for (target, name) in links {
        std::os::unix::fs::symlink(target, modules.join(name)).expect("link a client");
    }
    dir
}

fn vitest(dir: &Path, files: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("node");
    command
        .current_dir(dir)
        .args(["node_modules/vitest/vitest.mjs", "run"])
        .args(["--reporter=default", "--reporter=json"])
        .arg(format!("--outputFile.json={}", dir.join(REPORT).display()))
        .args(files)
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0");
    clear_inherited(&mut command);
    command
}

/// The JSON reporter's file, in the project folder.
const REPORT: &str = "vitest-report.json";

/// Each test's status in the last run's JSON report (`<file>::<full name>` → status, failure
/// messages joined).
fn statuses(dir: &Path) -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(dir.join(REPORT)).expect("the JSON report");
    let report: Value = serde_json::from_str(&text).expect("JSON report");
    let mut found = BTreeMap::new();
    for file in report["testResults"].as_array().expect("testResults") {
        let name = file["name"].as_str().expect("file name");
        let base = Path::new(name).file_name().expect("base").to_string_lossy();
        for test in file["assertionResults"]
            .as_array()
            .expect("assertionResults")
        {
            let messages: Vec<&str> = test["failureMessages"]
                .as_array()
                .map(|m| m.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            found.insert(
                format!("{base}::{}", test["fullName"].as_str().expect("fullName")),
                (
                    test["status"].as_str().expect("status").to_owned(),
                    messages.join("\n"),
                ),
            );
        }
    }
    found
}

/// The violation's test failed naming the rule, its neighbours passed (the JSON report).
fn assert_only_the_violating_test_failed(dir: &Path) {
    let statuses = statuses(dir);
    let status = |name: &str| {
        statuses
            .get(&format!("violation.test.js::{name}"))
            .unwrap_or_else(|| panic!("{name} in the report: {statuses:?}"))
    };
    assert_eq!(status("neighbour before").0, "passed", "{statuses:?}");
    assert_eq!(status("neighbour after").0, "passed", "{statuses:?}");
    let (state, message) = status("violation");
    assert_eq!(state, "failed", "{statuses:?}");
    assert!(
        message.contains(
            "tooltap violation tool_call.arguments_schema (error) at \
             /choices/0/message/tool_calls/0/function/arguments"
        ),
        "the test's failure names the rule: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tarballs_record_once_replay_offline_and_fail_misses_and_violations() {
    let root = TempDir::new("vitest-setup");
    let dir = project(&root).await;
    let recordings = root.join("recordings");

    // The launcher runs the platform package's executable.
    let mut version = tokio::process::Command::new("node");
    version
        .current_dir(&dir)
        .args(["node_modules/.bin/tooltap", "--version"]);
    let (out, text, _) = run(version).await;
    assert!(
        out.status.success() && text.contains(env!("CARGO_PKG_VERSION")),
        "tooltap --version through the launcher: {text}"
    );

    let (mut aimock, port) = start_aimock_with(&suite("aimock")).await;
    let mut once = vitest(
        &dir,
        &["providers.test.js", "violation.test.js", "aisdk.test.js"],
    );
    once.env("TOOLTAP_MODE", "once")
        .env("TOOLTAP_RECORDINGS", &recordings)
        .env("TOOLTAP_UPSTREAM", format!("http://127.0.0.1:{port}"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test");
    let (out, text, seconds) = run(once).await;
    eprintln!("vitest once: {seconds:.1} s");
    assert!(text.contains("1 failed | 10 passed"), "once: {text}");
    assert_only_the_violating_test_failed(&dir);
    assert!(
        !out.status.success()
            && text.contains(
                "tooltap violation tool_call.arguments_schema (error) at \
                 /choices/0/message/tool_calls/0/function/arguments"
            )
            && text.contains("(test violation.test.js::violation)"),
        "the recorded violation fails the run, naming the rule and the test: {text}"
    );
    // The setup file's fetch tagged each request with its test: tooltap filed them by cassette.
    for folder in [
        "stream_true___chat",
        "stream_false___anthropic",
        "tool_loop",
    ] {
        assert!(
            recordings.join("providers.test.js").join(folder).is_dir(),
            "{folder} recorded in its cassette's folder"
        );
    }
    // The AI SDK's loop: two turns, both in its test's folder.
    let loop_folder = recordings.join("aisdk.test.js/ai_sdk_tool_loop");
    let turns = std::fs::read_dir(&loop_folder)
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(turns, 2, "two recordings in {}", loop_folder.display());
    aimock.kill().await.expect("aimock stops");

    // Offline (the AI SDK's loop too), each test's turns reset before it (POST /__tooltap/reset answered 200).
    let mut none = vitest(&dir, &["providers.test.js", "aisdk.test.js"]);
    none.env("TOOLTAP_RECORDINGS", &recordings);
    let (out, text, seconds) = run(none).await;
    eprintln!("vitest none: {seconds:.1} s");
    assert!(
        out.status.success() && text.contains("8 passed"),
        "offline: {text}"
    );

    // Without providers.test.js, its recordings answer nothing: with TOOLTAP_FAIL_ON_UNUSED
    // that is named too.
    let mut failing = vitest(&dir, &["new.test.js", "violation.test.js"]);
    failing
        .env("TOOLTAP_RECORDINGS", &recordings)
        .env("TOOLTAP_FAIL_ON_UNUSED", "1");
    let (out, text, _) = run(failing).await;
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(
            "replay miss: tooltap replay: no recording of cassette new.test.js::new city \
             matches POST /v1/chat/completions"
        ) && text.contains("closest recording: providers.test.js/stream_false___chat/")
            && text.contains("which differs at /messages/0/content"),
        "the miss names the closest recording and the pointer: {text}"
    );
    assert!(
        text.contains("tooltap violation tool_call.arguments_schema (error)"),
        "the replayed violation fails the run: {text}"
    );
    assert_only_the_violating_test_failed(&dir);
    assert!(
        text.contains("recordings never used (cassette providers.test.js::tool loop): "),
        "the recordings no test asked for are named: {text}"
    );
    assert!(
        !text.contains("recordings never used (cassette violation.test.js"),
        "a used recording is not: {text}"
    );

    // new_episodes: the known requests replay, the missing one is forwarded (through the
    // pass-through router) and recorded in its cassette's folder; offline it then replays.
    let (mut aimock, port) = start_aimock_with(&suite("aimock")).await;
    let mut episodes = vitest(&dir, &["providers.test.js", "new.test.js"]);
    episodes
        .env("TOOLTAP_MODE", "new_episodes")
        .env("TOOLTAP_RECORDINGS", &recordings)
        .env("TOOLTAP_UPSTREAM", format!("http://127.0.0.1:{port}"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test");
    let (out, text, seconds) = run(episodes).await;
    eprintln!("vitest new_episodes: {seconds:.1} s");
    assert!(
        out.status.success() && text.contains("8 passed"),
        "new_episodes: {text}"
    );
    assert!(
        recordings.join("new.test.js/new_city").is_dir(),
        "the miss recorded in its cassette's folder"
    );
    aimock.kill().await.expect("aimock stops");
    let mut offline = vitest(&dir, &["new.test.js"]);
    offline.env("TOOLTAP_RECORDINGS", &recordings);
    let (out, text, _) = run(offline).await;
    assert!(out.status.success(), "the new episode replays: {text}");
}

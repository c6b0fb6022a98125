//! `pip install tooltap` and its pytest plugin: the wheel alone in a fresh venv (pytest and the
//! openai and anthropic SDKs come from the test interpreter's site-packages through a `.pth`
//! file, so nothing is downloaded) runs `package-suites/pytest` against aimock in `once` mode
//! (each test's recordings in its cassette's folder, the SDKs' requests tagged with the
//! `x-tooltap-cassette` header), then offline in `none` mode; a never-recorded test and a
//! recorded violation fail, named. The recording run uses two pytest-xdist workers (`-n 2`),
//! whose recordings must land in each test's own folder as without them. Then the
//! other modes on one test: `new_episodes` replays its recorded request and records only the
//! new one, `all` records both again beside the old, `rewrite` replaces them, and `none`
//! replays the rewritten one offline.

use std::collections::BTreeSet;
use std::path::Path;

use super::{clear_inherited, copy_files, dist_file, run, suite};
use crate::support::TempDir;
use crate::support::aimock::start_aimock_with;
use crate::support::clients::python;

/// A venv with only the wheel installed, the test interpreter's packages visible beside it.
async fn fresh_venv(root: &Path) -> std::path::PathBuf {
    let venv = root.join("venv");
    let (out, text, _) = run({
        let mut c = tokio::process::Command::new(python());
        c.args(["-m", "venv", "--without-pip"]).arg(&venv);
        c
    })
    .await;
    assert!(out.status.success(), "python -m venv: {text}");
    let purelib = |interpreter: &Path| {
        let output = std::process::Command::new(interpreter)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ])
            .output()
            .expect("python runs");
        String::from_utf8(output.stdout)
            .expect("utf-8")
            .trim()
            .to_owned()
    };
    let shared = purelib(&python());
    let own = purelib(&venv.join("bin/python"));
    std::fs::write(
        Path::new(&own).join("tooltap-test-deps.pth"),
        format!("import site; site.addsitedir({shared:?})\n"),
    )
    .expect("write .pth");
    let (out, text, seconds) = run({
        let mut c = tokio::process::Command::new(python());
        c.args(["-m", "pip", "--python"])
            .arg(venv.join("bin/python"))
            .args(["install", "--quiet", "--no-index", "--no-deps"])
            .arg("--disable-pip-version-check")
            .arg(dist_file("tooltap-", ".whl"));
        c
    })
    .await;
    assert!(out.status.success(), "pip install of the wheel: {text}");
    eprintln!("wheel installed in {seconds:.1} s");
    venv
}

fn pytest(venv: &Path, dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(venv.join("bin/python"));
    command
        .current_dir(dir)
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q"])
        .args(["-W", "ignore::DeprecationWarning"])
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    clear_inherited(&mut command);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wheel_records_once_replays_offline_and_fails_misses_and_violations() {
    let root = TempDir::new("pytest-plugin");
    let venv = fresh_venv(&root).await;
    let dir = root.join("suite");
    std::fs::create_dir_all(&dir).expect("suite dir");
    copy_files(&suite("pytest"), &dir);
    let recordings = root.join("recordings");
    let recordings_arg = format!("--tooltap-recordings={}", recordings.display());

    let (mut aimock, port) = start_aimock_with(&suite("aimock")).await;
    let upstream = format!("--tooltap-upstream=http://127.0.0.1:{port}");
    // Two pytest-xdist workers, each test still with its own tooltap and cassette folder.
    let mut once = pytest(
        &venv,
        &dir,
        &["--tooltap-mode=once", &recordings_arg, &upstream, "-n", "2"],
    );
    once.args(["test_providers.py", "test_violation.py"])
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("GEMINI_API_KEY", "gemini-test");
    let (out, text, seconds) = run(once).await;
    eprintln!("pytest once: {seconds:.1} s");
    assert!(text.contains("1 failed, 9 passed"), "once: {text}");
    assert!(!out.status.success());
    assert!(
        text.contains("FAILED test_violation.py::test_violation")
            && text.contains("tooltap violation tool_call.arguments_schema (error)"),
        "the violation fails its test, naming the rule: {text}"
    );
    // Each test's recordings in its cassette's folder, its node id in their recorded header.
    let folder = recordings.join("test_providers.py");
    for test in [
        "test_chat_streamed_",
        "test_anthropic_buffered_",
        "test_tool_loop",
    ] {
        assert!(
            folder.join(test).is_dir(),
            "{test} recorded into its own folder"
        );
    }
    let loop_recordings: Vec<String> = std::fs::read_dir(folder.join("test_tool_loop"))
        .expect("the loop's folder")
        .map(|entry| std::fs::read_to_string(entry.expect("entry").path()).expect("read"))
        .collect();
    assert_eq!(loop_recordings.len(), 2, "two turns, two recordings");
    assert!(
        loop_recordings
            .iter()
            .all(|text| text
                .contains(r#"["x-tooltap-cassette","test_providers.py::test_tool_loop"]"#)),
        "the cassette header was sent by the SDK's requests and recorded"
    );
    aimock.kill().await.expect("aimock stops");

    // Offline: the recorded suite passes, every recording used; the never-recorded test and
    // the violation fail, the latter also for a second copy of its recording that nothing asks.
    let violation = recordings.join("test_violation.py/test_violation");
    let recorded = std::fs::read_dir(&violation)
        .expect("the violation's folder")
        .next()
        .expect("one recording")
        .expect("entry")
        .path();
    std::fs::copy(&recorded, violation.join("zz-copy.jsonl")).expect("copy a recording");
    let none = pytest(
        &venv,
        &dir,
        &[
            &recordings_arg,
            "--tooltap-fail-on-unused",
            "-rf",
            "test_providers.py",
            "test_new.py",
            "test_violation.py",
        ],
    );
    let (out, text, seconds) = run(none).await;
    eprintln!("pytest none: {seconds:.1} s");
    assert!(
        !out.status.success() && text.contains("2 failed, 9 passed"),
        "offline: {text}"
    );
    assert!(
        text.contains("FAILED test_new.py::test_new_city")
            && text.contains("FAILED test_violation.py::test_violation"),
        "{text}"
    );
    assert!(
        text.contains("replay miss: tooltap replay: no recording of cassette test_new.py")
            && text.contains("cassette test_new.py::test_new_city has no recordings")
            && text.contains("closest recording: test_providers.py/test_chat_buffered_/")
            && text.contains("which differs at /messages/0/content"),
        "the miss names the closest recording and the pointer: {text}"
    );
    assert!(
        text.contains("no recordings for this test"),
        "a test without recordings fails in mode none: {text}"
    );
    assert!(
        text.contains("tooltap violation tool_call.arguments_schema (error)"),
        "the replayed violation fails its test: {text}"
    );
    assert!(
        text.contains(
            "recordings never used (cassette test_violation.py::test_violation): zz-copy.jsonl"
        ),
        "--tooltap-fail-on-unused names the recording nothing asked for: {text}"
    );

    modes(&venv, &dir, &recordings).await;
}

/// The `.jsonl` files of a cassette folder.
fn files(folder: &Path) -> BTreeSet<String> {
    std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .map(|entry| {
                    entry
                        .expect("entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .filter(|name| name.ends_with(".jsonl"))
                .collect()
        })
        .unwrap_or_default()
}

/// `new_episodes`, `all` and `rewrite` (pytest-recording's meanings) on `test_modes.py`, whose
/// second request is sent only with SUITE_SECOND_TURN=1, against aimock; then offline.
async fn modes(venv: &Path, dir: &Path, recordings: &Path) {
    let (mut aimock, port) = start_aimock_with(&suite("aimock")).await;
    let recordings_arg = format!("--tooltap-recordings={}", recordings.display());
    let upstream = format!("--tooltap-upstream=http://127.0.0.1:{port}");
    let episode = recordings.join("test_modes.py/test_episode");
    let suite_run = |mode: &str, second_turn: bool| {
        let mode = format!("--tooltap-mode={mode}");
        let mut command = pytest(venv, dir, &[&mode, &recordings_arg, &upstream]);
        command
            .arg("test_modes.py")
            .env("OPENAI_API_KEY", "sk-test");
        if second_turn {
            command.env("SUITE_SECOND_TURN", "1");
        }
        command
    };
    let mut seconds = Vec::new();
    let mut passes = |(out, text, took): (std::process::Output, String, f64), what: &str| {
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{what}: {text}"
        );
        seconds.push(format!("{what} {took:.1} s"));
    };

    passes(run(suite_run("once", false)).await, "once");
    let once = files(&episode);
    assert_eq!(once.len(), 1, "once records the first request: {once:?}");

    // new_episodes: the recorded request replays (it is not recorded again), the new one is
    // forwarded and recorded beside it.
    passes(run(suite_run("new_episodes", true)).await, "new_episodes");
    let episodes = files(&episode);
    assert!(
        episodes.len() == 2 && episodes.is_superset(&once),
        "new_episodes adds only the new request: {once:?} then {episodes:?}"
    );

    // all: both requests forwarded and recorded again, beside the old recordings.
    passes(run(suite_run("all", true)).await, "all");
    let all = files(&episode);
    assert!(
        all.len() == 4 && all.is_superset(&episodes),
        "all records every request: {episodes:?} then {all:?}"
    );

    // rewrite: the test's recordings replaced by what it sends now.
    passes(run(suite_run("rewrite", false)).await, "rewrite");
    let rewritten = files(&episode);
    assert!(
        rewritten.len() == 1 && rewritten.is_disjoint(&all),
        "rewrite replaces the recordings: {all:?} then {rewritten:?}"
    );
    aimock.kill().await.expect("aimock stops");

    // Offline, the rewritten recording answers.
    passes(run(suite_run("none", false)).await, "none after rewrite");
    eprintln!("pytest modes: {}", seconds.join(", "));
}

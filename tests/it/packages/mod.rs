//! The packages users install (issue 36), acceptance by the real tools: the wheel
//! `scripts/package --dev` builds, installed into a fresh venv, runs a pytest suite through its
//! plugin ([`pytest`]); the npm tarballs, installed with `npm install` from the files, run a
//! vitest suite through `tooltap/vitest` ([`vitest`]). Each records its suite against aimock in
//! `once` mode, replays it in `none` mode with aimock stopped, and fails a never-recorded test
//! (naming the closest recording and the differing pointer) and a recorded violation (naming the
//! rule). The suites live in `tests/clients/package-suites`.
//!
//! Input: `TOOLTAP_TEST_DIST` (else `target/dist-dev`), the folder `scripts/package --dev`
//! fills; `scripts/test` builds it before the tests. A missing or stale folder fails loudly,
//! naming that command.

mod cassette_names;
mod pytest;
mod vitest;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::within;

/// Each suite run (one pytest or vitest process) may take this long: about half a minute on a
/// loaded 2-core machine, so the limit catches a hang, not a slow run.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// `tests/clients/package-suites/<name>`.
fn suite(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients/package-suites")
        .join(name)
}

/// The one file in the dist folder whose name starts with `prefix` and ends with `suffix`,
/// checked to be no older than the sources it packs (else it holds an old tooltap). The sources,
/// not the test binary: cargo builds the binary the tests use and maturin its own copy.
fn dist_file(prefix: &str, suffix: &str) -> PathBuf {
    let dir = std::env::var_os("TOOLTAP_TEST_DIST").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist-dev"),
        PathBuf::from,
    );
    let found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}: run scripts/package --dev (scripts/test does, and sets TOOLTAP_TEST_DIST)",
                dir.display()
            )
        })
        .map(|entry| entry.expect("dist entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with(prefix)
                && name.ends_with(suffix)
                && !name[prefix.len()..].starts_with("linux")
        })
        .collect();
    assert_eq!(found.len(), 1, "one {prefix}*{suffix} in {}", dir.display());
    let packed = std::fs::metadata(&found[0])
        .and_then(|m| m.modified())
        .expect("package mtime");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = [
        "src",
        "python",
        "npm",
        "Cargo.toml",
        "Cargo.lock",
        "pyproject.toml",
    ];
    let newest = sources
        .iter()
        .filter_map(|source| newest_mtime(&root.join(source)))
        .max()
        .expect("the sources exist");
    assert!(
        packed >= newest,
        "{} is older than the sources it packs: run scripts/package --dev",
        found[0].display()
    );
    found[0].clone()
}

/// The newest modification time of `path` or anything below it.
fn newest_mtime(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    let own = meta.modified().ok();
    if !meta.is_dir() {
        return own;
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(|entry| newest_mtime(&entry.ok()?.path()))
        .chain(own)
        .max()
}

/// Copies the files of `from` (not its sub-folders; symlinks followed) into `to`.
fn copy_files(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("suite folder") {
        let path = entry.expect("suite entry").path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().expect("name"))).expect("copy");
        }
    }
}

/// Runs `command` to its end (failing the test after [`RUN_LIMIT`]); its output, its stdout and
/// stderr as one text, and the seconds it took.
async fn run(mut command: tokio::process::Command) -> (Output, String, f64) {
    let started = Instant::now();
    let output = within(RUN_LIMIT, command.output())
        .await
        .expect("the command runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, text, started.elapsed().as_secs_f64())
}

/// Keeps a suite run from inheriting [`CLEARED`] from the environment running the tests.
fn clear_inherited(command: &mut tokio::process::Command) {
    for name in CLEARED {
        command.env_remove(name);
    }
}

/// The environment variables a suite run must not inherit from the one running the tests.
const CLEARED: [&str; 13] = [
    "TOOLTAP_MODE",
    "TOOLTAP_RECORDINGS",
    "TOOLTAP_UPSTREAM",
    "TOOLTAP_FAIL_ON",
    "TOOLTAP_FAIL_ON_UNUSED",
    "TOOLTAP_BIN",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_API_KEY",
    "OLLAMA_HOST",
];

//! The real client programs the tests drive: the Python interpreter `scripts/test` installs
//! (with the `openai`, `openai-agents`, `anthropic`, `google-genai` and `boto3` SDKs), the
//! scripts under `tests/clients/python`, and the Node SDK scripts beside aimock in
//! `tests/clients/aimock`.
//!
//! Input: a script name and its arguments; output: the finished process's [`Output`]. A missing
//! interpreter fails the test loudly, naming the command that installs it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use super::within;

/// The Python interpreter with the SDKs that `scripts/test` installs (`TOOLTAP_TEST_PYTHON`,
/// else `.deps/venv/bin/python`).
pub fn python() -> PathBuf {
    let path = std::env::var_os("TOOLTAP_TEST_PYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/venv/bin/python"),
        PathBuf::from,
    );
    assert!(
        path.exists(),
        "no python with the openai SDK at {}: run scripts/test (it installs .deps/venv and sets \
         TOOLTAP_TEST_PYTHON)",
        path.display()
    );
    path
}

/// `tests/clients/python/<name>`.
pub fn python_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients/python")
        .join(name)
}

/// Runs `tests/clients/python/<script>` with `args`, failing the test after `limit`.
pub async fn run_python<S: AsRef<OsStr>>(script: &str, args: &[S], limit: Duration) -> Output {
    let mut command = tokio::process::Command::new(python());
    command.arg(python_script(script)).args(args);
    within(limit, command.output()).await.expect("python runs")
}

/// A client script's JSON output, once `who` (the SDK or interpreter) ran against `base_url`
/// and exited 0; its stderr is the failure message otherwise.
pub fn script_json(output: &Output, who: &str, base_url: &str) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{who} failed against {base_url}: {stderr}"
    );
    serde_json::from_slice(&output.stdout).expect("the script prints JSON")
}

/// Runs a client script against `base_url` in `mode` and returns its JSON output: for `python`
/// (`sdk`) `tests/clients/python/<script>.py`, else `node <script>.mjs` in aimock's folder,
/// whose `node_modules` must hold the SDK `package`.
pub async fn run_sdk_script(
    sdk: &str,
    script: &str,
    package: &str,
    base_url: &str,
    mode: &str,
) -> Value {
    let mut command = if sdk == "python" {
        let mut command = tokio::process::Command::new(python());
        command.arg(python_script(&format!("{script}.py")));
        command
    } else {
        let dir = super::aimock::aimock_dir();
        assert!(
            dir.join("node_modules")
                .join(package)
                .join("package.json")
                .exists(),
            "{package} is missing: run scripts/test, which installs it"
        );
        let mut command = tokio::process::Command::new("node");
        command.current_dir(&dir).arg(format!("{script}.mjs"));
        command
    };
    let output = within(
        Duration::from_secs(120),
        command.arg(base_url).arg(mode).output(),
    )
    .await
    .expect("the SDK script runs");
    script_json(&output, sdk, base_url)
}

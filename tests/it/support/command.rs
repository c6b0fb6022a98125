//! External programs in tests: finding one on PATH, running one that must succeed (its output
//! in the failure message), and stopping a child with SIGTERM as an orchestrator would.

use std::path::PathBuf;
use std::process::{Command, ExitStatus, Output};
use std::time::Duration;

use super::within;

/// `name` in a PATH folder, if any.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Runs `command` to its end and fails the test, naming the command and quoting its output,
/// unless it exits 0.
pub fn succeed(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
    assert!(
        output.status.success(),
        "{command:?} gave {}: {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Sends SIGTERM to `child` and waits (at most 20 s) for its exit.
pub async fn sigterm(child: &mut tokio::process::Child) -> ExitStatus {
    let pid = child.id().expect("a running child").to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    within(Duration::from_secs(20), child.wait())
        .await
        .expect("wait")
}

//! `@copilotkit/aimock` (npm), the third-party upstream the client acceptance tests run the real
//! SDKs against: the folder `scripts/test` installs it into, and a child serving its fixtures.
//!
//! Input: `TOOLTAP_TEST_AIMOCK` (else `tests/clients/aimock`). Output: the running child and its
//! loopback port; a missing install fails the test loudly, naming the command that installs it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::within;

/// The folder scripts/test installs aimock into (`npm ci` in tests/clients/aimock).
pub fn aimock_dir() -> PathBuf {
    let dir = std::env::var_os("TOOLTAP_TEST_AIMOCK")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/aimock"));
    let cli = dir.join("node_modules/@copilotkit/aimock/dist/cli.js");
    assert!(
        cli.exists(),
        "{} is missing: run scripts/test, which installs @copilotkit/aimock",
        cli.display()
    );
    dir
}

/// Starts aimock on a free loopback port; the child is killed when dropped.
pub async fn start_aimock() -> (tokio::process::Child, u16) {
    start_aimock_with(Path::new("fixtures")).await
}

/// Starts aimock serving the fixture files in `fixtures` (relative to aimock's folder, or
/// absolute) on a free loopback port; the child is killed when dropped.
pub async fn start_aimock_with(fixtures: &Path) -> (tokio::process::Child, u16) {
    let dir = aimock_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = tokio::process::Command::new("node")
        .current_dir(&dir)
        .arg("node_modules/@copilotkit/aimock/dist/cli.js")
        .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-f"])
        .arg(fixtures)
        .args(["--log-level", "warn"])
        .kill_on_drop(true)
        .spawn()
        .expect("node starts aimock");
    within(Duration::from_secs(30), async {
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    (child, port)
}

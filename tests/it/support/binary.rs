//! Starting the real `tooltap` binary for a test: JSON logs on stdout, the bound address read
//! from its ready line, killed when the handle is dropped.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use super::within;

/// A running binary: the child, its log lines so far, and the rest to read.
pub struct Running {
    pub child: Child,
    pub addr: SocketAddr,
    /// The admin listener's address, when its log line came before the ready line.
    pub admin: Option<SocketAddr>,
    pub lines: Lines<BufReader<ChildStdout>>,
    pub log: Vec<String>,
}

/// The arguments that record every exchange under `recordings`, write violations to
/// `violations`, and forward to `upstream`.
pub fn recording_args(upstream: &str, recordings: &Path, violations: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--upstream", upstream, "--record", "all", "--recordings"]
        .iter()
        .map(OsString::from)
        .collect();
    args.push(recordings.into());
    args.push("--violations".into());
    args.push(violations.into());
    args
}

/// Starts `tooltap proxy` on ephemeral ports with JSON logs and `extra` arguments, and waits
/// for its ready line.
pub async fn start_proxy(extra: &[&std::ffi::OsStr], rust_log: &str) -> Running {
    start_proxy_under(None, extra, rust_log).await
}

/// [`start_proxy`] run through a wrapper command (e.g. `prlimit --nofile=64:64`).
pub async fn start_proxy_under(
    wrapper: Option<(&str, &[&str])>,
    extra: &[&std::ffi::OsStr],
    rust_log: &str,
) -> Running {
    let listen = [
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ];
    start_binary(
        wrapper,
        &listen,
        extra,
        &[],
        rust_log,
        "tooltap proxy ready",
    )
    .await
}

/// Starts `tooltap replay` on an ephemeral port with JSON logs and `extra` arguments (which
/// must hold `--recordings`), and waits for its ready line.
pub async fn start_replay(extra: &[&std::ffi::OsStr], rust_log: &str) -> Running {
    start_replay_with(extra, &[], rust_log).await
}

/// [`start_replay`] with environment variables `envs` set for the process.
pub async fn start_replay_with(
    extra: &[&std::ffi::OsStr],
    envs: &[(&str, &str)],
    rust_log: &str,
) -> Running {
    let listen = ["replay", "--listen", "127.0.0.1:0"];
    start_binary(None, &listen, extra, envs, rust_log, "tooltap replay ready").await
}

async fn start_binary(
    wrapper: Option<(&str, &[&str])>,
    listen: &[&str],
    extra: &[&std::ffi::OsStr],
    envs: &[(&str, &str)],
    rust_log: &str,
    ready: &str,
) -> Running {
    let binary = env!("CARGO_BIN_EXE_tooltap");
    let mut command = match wrapper {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(binary);
            command
        }
        None => Command::new(binary),
    };
    let mut child = command
        .args(listen)
        .args(["--log-format", "json"])
        .args(extra)
        .envs(envs.iter().copied())
        .env("RUST_LOG", rust_log)
        .env_remove("TOOLTAP_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the tooltap binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut log = Vec::new();
    let Some((addr, admin)) = ready_line_of(&mut lines, &mut log, ready).await else {
        let status = child.wait().await.expect("wait");
        let mut stderr = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut err, &mut stderr).await;
        }
        panic!("tooltap exited early ({status}): {stderr}");
    };
    Running {
        child,
        addr,
        admin,
        lines,
        log,
    }
}

/// Reads tooltap's JSON log lines (into `log`) until its ready line, within 20 s: the proxy's
/// address, and the admin listener's when its line came first. None when the output ended
/// before it (the process exited).
pub async fn ready_line(
    lines: &mut Lines<BufReader<ChildStdout>>,
    log: &mut Vec<String>,
) -> Option<(SocketAddr, Option<SocketAddr>)> {
    ready_line_of(lines, log, "tooltap proxy ready").await
}

/// [`ready_line`] for the ready message `ready` (`tooltap replay ready` for replay).
async fn ready_line_of(
    lines: &mut Lines<BufReader<ChildStdout>>,
    log: &mut Vec<String>,
    ready: &str,
) -> Option<(SocketAddr, Option<SocketAddr>)> {
    within(Duration::from_secs(20), async {
        let mut admin = None;
        while let Some(line) = lines.next_line().await.expect("read") {
            let value: serde_json::Value = serde_json::from_str(&line).expect("JSON log line");
            log.push(line.clone());
            if let Some(address) = value["fields"]["admin"].as_str() {
                admin = Some(address.parse().expect("admin address"));
            }
            if value["fields"]["message"] == ready {
                let listen = value["fields"]["listen"].as_str().expect("listen field");
                return Some((listen.parse().expect("address"), admin));
            }
        }
        None
    })
    .await
}

impl Running {
    /// Stops the process with SIGTERM, asserts it exited cleanly, and reads the rest of its log
    /// (stdout) and its stderr into [`Running::log`].
    pub async fn stop_and_drain(&mut self) {
        let status = self.stop().await;
        assert!(
            status.success(),
            "tooltap exited with {status} after SIGTERM"
        );
    }

    /// Stops the process with SIGTERM, reads the rest of its log (stdout) and its stderr into
    /// [`Running::log`], and returns how it exited.
    pub async fn stop(&mut self) -> std::process::ExitStatus {
        let status = super::command::sigterm(&mut self.child).await;
        while let Ok(Some(line)) = self.lines.next_line().await {
            self.log.push(line);
        }
        if let Some(stderr) = self.child.stderr.take() {
            let mut errors = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = errors.next_line().await {
                self.log.push(line);
            }
        }
        status
    }

    /// Reads log lines until one contains `needle`.
    pub async fn wait_for_line(&mut self, needle: &str) {
        within(Duration::from_secs(20), async {
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .expect("read")
                    .expect("tooltap exited early");
                self.log.push(line.clone());
                if line.contains(needle) {
                    return;
                }
            }
        })
        .await;
    }
}

//! The real `tooltap` binary: it starts with no config file, logs JSON lines, never logs a
//! credential even at debug verbosity, and stops cleanly on SIGTERM.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::engine_support;
use crate::support::TempDir;
use crate::support::binary::{self, Running};
use crate::support::client::{exchange, request};
use crate::support::fixtures::fixture_upstream;
use crate::support::within;

const SECRET: &str = "sk-planted-5b0e2d44";

#[tokio::test]
async fn the_binary_never_logs_a_credential_and_stops_on_sigterm() {
    let fixture = engine_support::fixture("buffered_arguments_object");
    let upstream = fixture_upstream(std::slice::from_ref(&fixture)).await;
    let dir = TempDir::new("binary");
    let recordings = dir.join("rec");
    let violations = dir.join("violations.jsonl");
    // A single-threaded runtime: the option operators may pick on small machines.
    let mut args: Vec<std::ffi::OsString> = vec!["--worker-threads".into(), "1".into()];
    args.extend(binary::recording_args(
        &upstream.url(),
        &recordings,
        &violations,
    ));
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|arg| arg.as_os_str()).collect();
    let Running {
        mut child,
        addr,
        mut lines,
        mut log,
        ..
    } = binary::start_proxy(&args, "trace").await;

    let mut body: serde_json::Value = serde_json::from_slice(&fixture.request).expect("json");
    body["user"] = SECRET.into();
    let path = format!("/v1/chat/completions?key={SECRET}");
    let mut req = request(addr, "POST", &path, &body.to_string());
    req.headers_mut()
        .insert("x-fixture", fixture.name.parse().expect("value"));
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {SECRET}").parse().expect("value"),
    );
    let got = exchange(addr, req).await;
    assert_eq!(got.body, fixture.body);

    // Read until the exchange's summary, then stop the process.
    within(Duration::from_secs(20), async {
        loop {
            let line = lines
                .next_line()
                .await
                .expect("read")
                .expect("tooltap exited early");
            log.push(line.clone());
            if line.contains("exchange inspected") {
                return;
            }
        }
    })
    .await;
    let pid = child.id().expect("pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = within(Duration::from_secs(20), child.wait())
        .await
        .expect("wait");
    assert!(
        status.success(),
        "tooltap exited with {status} after SIGTERM"
    );
    while let Ok(Some(line)) = lines.next_line().await {
        log.push(line);
    }
    let stderr = child.stderr.take().expect("stderr");
    let mut errors = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = errors.next_line().await {
        log.push(line);
    }
    assert!(
        log.len() > 5,
        "too little logged to prove anything: {log:?}"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("tool_call.arguments_not_string"))
    );
    for line in &log {
        assert!(
            !line.contains(SECRET),
            "a log line holds the planted key: {line}"
        );
    }
}

/// Human logs on a pipe carry no colour codes, and a clash on the admin port names the admin
/// listener and the flag that moves it.
#[tokio::test]
async fn piped_logs_are_plain_and_an_admin_port_clash_names_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").to_string();
    let output = within(
        Duration::from_secs(20),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
            .args(["proxy", "--listen", "127.0.0.1:0", "--admin-listen", &port])
            .args(["--violations", "off", "--record", "off"])
            .env("RUST_LOG", "info")
            .env_remove("TOOLTAP_CONFIG")
            .output(),
    )
    .await
    .expect("runs");
    assert!(!output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains(" INFO "),
        "human logs were written: {stdout}"
    );
    assert!(
        !stdout.contains('\u{1b}'),
        "colour codes on a pipe: {stdout:?}"
    );
    assert!(
        stderr.contains("admin listener") && stderr.contains("--admin-listen"),
        "{stderr}"
    );
    drop(taken);
}

/// A recordings folder that cannot be written is said at start, naming the flag, not at the
/// first violation.
#[tokio::test]
async fn an_unwritable_recordings_folder_is_refused_at_start() {
    // Under a regular file: no user, root included, can make a folder there.
    let file = std::env::temp_dir().join(format!("tooltap-it-not-a-folder-{}", std::process::id()));
    std::fs::write(&file, "x").expect("write");
    let output = within(
        Duration::from_secs(20),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
            .args(["proxy", "--listen", "127.0.0.1:0", "--admin-listen", "off"])
            .args(["--violations", "off", "--record", "violations"])
            .arg("--recordings")
            .arg(file.join("recordings"))
            .env_remove("TOOLTAP_CONFIG")
            .output(),
    )
    .await
    .expect("runs");
    let _ = std::fs::remove_file(&file);
    assert!(!output.status.success(), "it must not start");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot write recordings") && stderr.contains("--recordings"),
        "{stderr}"
    );
}

/// At INFO, an exchange with violations gets its summary line and a clean one does not (its
/// facts are in the metrics); at DEBUG both do, each at its level.
#[tokio::test]
async fn a_clean_exchanges_summary_is_at_debug_and_a_violating_ones_at_info() {
    let clean = engine_support::fixture("pair_parallel_json");
    let broken = engine_support::fixture("buffered_arguments_object");
    let upstream = fixture_upstream(&[clean.clone(), broken.clone()]).await;
    let dir = TempDir::new("summary-level");
    let url = upstream.url();
    let violations = dir.join("v.jsonl");
    for level in ["info", "debug"] {
        let args: [&std::ffi::OsStr; 4] = [
            "--upstream".as_ref(),
            url.as_ref(),
            "--violations".as_ref(),
            violations.as_os_str(),
        ];
        let mut running = binary::start_proxy(&args, level).await;
        let addr = running.addr;
        // Clean, violating, then violating again: the last one's summary comes after the clean
        // exchange was judged (its verdict takes microseconds, the two exchanges after it a
        // round trip each), so a clean line at INFO would be in the log by then.
        let mut ids = Vec::new();
        for fixture in [&clean, &broken, &broken] {
            let got = exchange(
                addr,
                crate::support::fixtures::fixture_request(addr, fixture),
            )
            .await;
            assert_eq!(got.body, fixture.body);
            ids.push(
                got.headers["x-tooltap-exchange"]
                    .to_str()
                    .expect("id")
                    .to_owned(),
            );
        }
        let summary_of = |log: &[String], id: &str| -> Vec<String> {
            let id = format!("\"exchange\":\"{id}\"");
            log.iter()
                .filter(|line| line.contains("exchange inspected") && line.contains(&id))
                .cloned()
                .collect()
        };
        let wanted: &[&str] = if level == "debug" {
            &[&ids[0], &ids[1], &ids[2]]
        } else {
            &[&ids[1], &ids[2]]
        };
        while wanted
            .iter()
            .any(|id| summary_of(&running.log, id).is_empty())
        {
            running.wait_for_line("exchange inspected").await;
        }
        for id in &ids[1..] {
            let lines = summary_of(&running.log, id);
            assert!(lines[0].contains("\"level\":\"INFO\""), "{lines:?}");
        }
        let clean_lines = summary_of(&running.log, &ids[0]);
        if level == "debug" {
            assert_eq!(clean_lines.len(), 1, "{clean_lines:?}");
            assert!(
                clean_lines[0].contains("\"level\":\"DEBUG\""),
                "{clean_lines:?}"
            );
        } else {
            assert!(
                clean_lines.is_empty(),
                "a clean summary at info: {clean_lines:?}"
            );
        }
    }
}

/// With the exchange span at `debug` (the default for an exchange neither enforced nor
/// injected), a failed exchange's `info`-level-and-above line still names the exchange.
#[tokio::test]
async fn a_failed_exchange_is_logged_with_its_id_route_method_and_path() {
    // A port nobody listens on: the upstream refuses the connection.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let args: [&std::ffi::OsStr; 2] = ["--upstream".as_ref(), url.as_ref()];
    let mut running = binary::start_proxy(&args, "info").await;
    let addr = running.addr;
    let got = exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    assert_eq!(got.status, 502);
    let id = got.headers["x-tooltap-exchange"]
        .to_str()
        .expect("id")
        .to_owned();
    running.wait_for_line("exchange failed").await;
    let line = running
        .log
        .iter()
        .find(|line| line.contains("exchange failed"))
        .expect("the line");
    for field in [
        format!("\"exchange\":\"{id}\""),
        "\"route\":\"default\"".to_owned(),
        "\"method\":\"POST\"".to_owned(),
        "\"path\":\"/v1/chat/completions\"".to_owned(),
        "\"level\":\"WARN\"".to_owned(),
    ] {
        assert!(line.contains(&field), "{field} in {line}");
    }
}

//! An MCP server recorded through `tooltap proxy` and served by `tooltap replay` to a real
//! client: the Python `mcp` 2.x `MCPServer` (`tests/clients/python/mcp_replay_server.py`, one
//! tool with an `outputSchema`, one without) and its `Client`
//! (`tests/clients/python/mcp_replay_client.py`: list the tools, call each, call an unknown
//! one). The client gets the same tool list and results direct, through the proxy and from
//! replay once the server is gone; the recordings hold a pseudonym of the session id and a
//! digest of the bearer token, never the token, and `tooltap check` finds in them what the
//! proxy found live.

use std::ffi::OsStr;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use crate::replay::support::{TempDir, settings, start, within};
use crate::support::binary::{recording_args, start_proxy};
use crate::support::check::check_json;
use crate::support::clients::{python, python_script, run_python, script_json};
use crate::support::mcp::{McpServer, spawn_server};
use crate::support::temp::{json_lines, jsonl_under};

const CLIENT_LIMIT: Duration = Duration::from_secs(60);
const TOKEN: &str = "sk-mcp-test-token-0123456789";

/// `mcp_replay_server.py` running on an ephemeral port (killed on drop); it keeps no access log.
async fn start_server(body: &str, state: &str) -> McpServer {
    let dir = TempDir::new(&format!("mcp-replay-{body}-{state}"));
    let access_log = dir.join("access.log");
    let mut command = Command::new(python());
    command
        .arg(python_script("mcp_replay_server.py"))
        .args([body, state]);
    spawn_server(command, dir, access_log).await
}

/// What the Python client got from the MCP endpoint `url`.
async fn client(url: &str, mode: &str, token: Option<&str>) -> Value {
    let mut args = vec![url, mode];
    args.extend(token);
    let output = run_python("mcp_replay_client.py", &args, CLIENT_LIMIT).await;
    script_json(&output, "the python mcp Client", url)
}

/// The violations' only error is `mcp.tools_call.name_unlisted` on the call of `no_such_tool`.
fn assert_only_the_unlisted_call(judged: &[Value], case: &str) {
    let errors: Vec<&Value> = judged.iter().filter(|v| v["severity"] == "error").collect();
    let unlisted = |v: &&Value| {
        v["rule"] == "mcp.tools_call.name_unlisted"
            && v["detail"]
                .as_str()
                .is_some_and(|d| d.contains("no_such_tool"))
    };
    assert!(errors.iter().any(unlisted), "{case}: {judged:?}");
    assert!(errors.iter().all(unlisted), "{case}: {errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_mcp_server_recorded_through_the_proxy_replays_to_its_client_as_direct() {
    for (body, mode) in [("sse", "legacy"), ("json", "auto")] {
        let server = start_server(body, "stateful").await;
        let upstream = format!("http://127.0.0.1:{}", server.port);
        let direct = client(&format!("{upstream}/mcp"), mode, None).await;
        assert_eq!(
            direct["tools"].as_array().map(Vec::len),
            Some(2),
            "{direct}"
        );
        assert_eq!(
            direct["calls"].as_array().map(Vec::len),
            Some(4),
            "{direct}"
        );

        let recordings = TempDir::new("mcp-recordings");
        let violations = TempDir::new("mcp-violations");
        let args = recording_args(
            &upstream,
            recordings.path(),
            &violations.path().join("v.jsonl"),
        );
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let mut proxy = start_proxy(&args, "info").await;
        let url = format!("http://{}/mcp", proxy.addr);
        let through = client(&url, mode, Some(TOKEN)).await;
        proxy.stop_and_drain().await;
        drop(server);
        assert_eq!(through, direct, "{body}/{mode}: through the proxy");
        // The healthy server judged healthy: the one error-severity finding is the client's
        // own call of a tool the catalogue does not list (the script calls one on purpose).
        let judged = json_lines(&violations.path().join("v.jsonl"));
        assert_only_the_unlisted_call(&judged, &format!("{body}/{mode}"));

        // Every exchange recorded, in clear what keys the conversation, never the token.
        let files = jsonl_under(recordings.path());
        let metas: Vec<Value> = files
            .iter()
            .map(|file| json_lines(file).swap_remove(0))
            .collect();
        assert!(
            metas.len() >= 6,
            "{body}/{mode}: {} recordings",
            metas.len()
        );
        for file in &files {
            let text = std::fs::read_to_string(file).expect("read");
            assert!(
                !text.contains(TOKEN),
                "{}: the token is on disk",
                file.display()
            );
        }
        let header = |meta: &Value, name: &str| -> Option<String> {
            meta["request"]["headers"]
                .as_array()?
                .iter()
                .find(|pair| pair[0] == name)
                .and_then(|pair| pair[1].as_str().map(str::to_owned))
        };
        let digests: Vec<&str> = metas
            .iter()
            .filter_map(|meta| meta["credential"].as_str())
            .collect();
        assert_eq!(
            digests.len(),
            metas.len(),
            "{body}/{mode}: a digest on each"
        );
        assert!(
            digests
                .iter()
                .all(|d| d.starts_with("hmac-sha256:") && *d == digests[0])
        );
        assert!(metas.iter().all(|meta| meta["dialect"] == "mcp"));
        let call = metas
            .iter()
            .find(|meta| meta["request"]["body"]["json"]["method"] == "tools/call")
            .expect("a tools/call recording");
        assert!(header(call, "accept").is_some(), "{call}");
        if mode == "legacy" {
            // A pseudonym (`tt-` and 32 hex digits), one per session: replay serves ids of its own.
            let session = header(call, "mcp-session-id").expect("the session id's pseudonym");
            assert!(
                session.starts_with("tt-") && session.len() == 35,
                "{session}"
            );
            let sessions: std::collections::BTreeSet<String> = metas
                .iter()
                .filter_map(|meta| header(meta, "mcp-session-id"))
                .collect();
            assert_eq!(
                sessions.len(),
                1,
                "{body}/{mode}: one session: {sessions:?}"
            );
            assert!(header(call, "mcp-protocol-version").is_some(), "{call}");
            assert!(metas.iter().any(|meta| meta["method"] == "DELETE"));
        }

        // `check` rebuilds the conversation from the pseudonyms: the same one error.
        let checked = check_json(recordings.path());
        let offline: Vec<Value> = checked.report["exchanges"]
            .as_array()
            .expect("exchanges")
            .iter()
            .flat_map(|exchange| {
                exchange["violations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        assert_only_the_unlisted_call(&offline, &format!("{body}/{mode} by check"));

        let mut replaying = settings(recordings.path());
        let replay_violations = violations.path().join("replay.jsonl");
        replaying.violations = Some(replay_violations.clone());
        let replay = start(&replaying).await;
        let url = format!("http://{}/mcp", replay.local_addr());
        let replayed = client(&url, mode, None).await;
        assert_eq!(replayed, direct, "{body}/{mode}: from replay");
        if mode == "legacy" {
            // A second client session gets the same answers (and its own session id).
            let again = client(&url, mode, None).await;
            assert_eq!(again, direct, "{body}/{mode}: from replay, again");
        }
        within(Duration::from_secs(20), replay.shutdown())
            .await
            .expect("replay stops");
        // What replay served (the client's ids, replay's session ids) is judged healthy too.
        let judged = json_lines(&replay_violations);
        assert_only_the_unlisted_call(&judged, &format!("{body}/{mode} from replay"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_quirks_break_the_python_client_from_replay_and_live() {
    let server = start_server("sse", "stateful").await;
    let upstream = format!("http://127.0.0.1:{}", server.port);
    let recordings = TempDir::new("mcp-quirk-recordings");
    let violations = TempDir::new("mcp-quirk-violations");
    let mut args = recording_args(
        &upstream,
        recordings.path(),
        &violations.path().join("v.jsonl"),
    );
    args.extend(["--inject".into(), "mcp-output-off-schema".into()]);
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let mut proxy = start_proxy(&args, "info").await;
    let live = client(&format!("http://{}/mcp", proxy.addr), "legacy", None).await;
    proxy.stop_and_drain().await;
    drop(server);
    // The tool with an outputSchema fails its validation; the one without is untouched.
    let raised = live["calls"][0]["raised"].as_str().unwrap_or_default();
    assert!(raised.contains("Invalid structured content"), "{live}");
    let judged = json_lines(&violations.path().join("v.jsonl"));
    let rules: Vec<&str> = judged.iter().filter_map(|v| v["rule"].as_str()).collect();
    assert!(
        rules.contains(&"mcp.tools_call.structured_content_schema"),
        "{rules:?}"
    );
    assert_eq!(
        live["calls"][1]["result"]["content"][0]["text"], "HELLO",
        "{live}"
    );

    // Replay serves the recordings as the client got them (the injected quirk included): the
    // recordings' own `injected` mark says so; --quirk breaks them another way on top.
    let mut settings = settings(recordings.path());
    settings.violations = Some(violations.path().join("replay.jsonl"));
    settings.quirks = vec![tooltap::quirk::QuirkId::McpStructuredContentDropped];
    let replay = start(&settings).await;
    let replayed = client(
        &format!("http://{}/mcp", replay.local_addr()),
        "legacy",
        None,
    )
    .await;
    let raised = replayed["calls"][0]["raised"].as_str().unwrap_or_default();
    assert!(
        raised.contains("did not return structured content"),
        "{replayed}"
    );
    within(Duration::from_secs(20), replay.shutdown())
        .await
        .expect("replay stops");
    let judged = json_lines(&violations.path().join("replay.jsonl"));
    let rules: Vec<&str> = judged.iter().filter_map(|v| v["rule"].as_str()).collect();
    assert!(
        rules.contains(&"mcp.tools_call.structured_content_missing"),
        "{rules:?}"
    );
}

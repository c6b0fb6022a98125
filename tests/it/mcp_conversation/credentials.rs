//! 2026-07-28 conversations are keyed by the caller's credential (reference §4.10): two clients
//! of one upstream with different `Authorization` headers each list their own tools, and one's
//! catalog never judges the other's calls. Live (the proxy hands the credential's digest to the
//! conversation store) and through `tooltap check` (which reads the recordings' `credential`),
//! with the same verdicts.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};

use super::{live_equals_check, send_v4};
use crate::support::temp::files_under;
use crate::support::upstream::{Received, Script, Upstream};
use crate::support::{TempDir, proxy, within};

const MODERN: &str = "2026-07-28";

/// A 2026-07-28 server whose tool list depends on who calls: `Bearer alice` gets `alice_tool`,
/// anyone else `bob_tool`. Every call succeeds.
fn answer(request: &Received) -> Script {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let alice = request
        .headers
        .get("authorization")
        .is_some_and(|value| value == "Bearer alice");
    let tool = if alice { "alice_tool" } else { "bob_tool" };
    let result = match body["method"].as_str().unwrap_or_default() {
        "tools/list" => json!({"resultType":"complete","tools":[
            {"name": tool, "inputSchema": {"type":"object"}}
        ]}),
        _ => json!({"resultType":"complete","content":[{"type":"text","text":"done"}]}),
    };
    let answer = json!({"jsonrpc":"2.0","id":body["id"],"result":result});
    Script::full(200, "application/json", &answer.to_string())
}

/// One 2026-07-28 request (`tools/list`, or `tools/call` of `tool`) with `who`'s credential.
async fn send(addr: SocketAddr, who: &str, id: u64, tool: Option<&str>) -> u16 {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let (method, params) = match tool {
        Some(name) => (
            "tools/call",
            json!({"name": name, "arguments": {}, "_meta": meta}),
        ),
        None => ("tools/list", json!({"_meta": meta})),
    };
    let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
    send_v4(addr, body, &[("authorization", format!("Bearer {who}"))]).await
}

/// The number at the end of an exchange id (ids count up as requests arrive).
fn number(id: &str) -> u64 {
    id.rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("an exchange id ends in its number")
}

#[tokio::test]
async fn two_credentials_on_one_upstream_keep_their_own_tool_catalogs() {
    let upstream = Upstream::start(answer, None).await;
    let dir = TempDir::new("mcp-credentials");
    let recordings = dir.join("recordings");
    let violations = dir.join("violations.jsonl");
    let tooltap = proxy::start_recording(&upstream.url(), &violations, &recordings).await;
    let addr = tooltap.local_addr();
    // Bob lists after Alice: with one shared conversation, Bob's catalog would judge Alice's
    // call of her own tool (unlisted) and let her call of Bob's tool pass.
    let steps = [
        ("alice", None),
        ("bob", None),
        ("alice", Some("alice_tool")),
        ("bob", Some("bob_tool")),
        ("alice", Some("bob_tool")),
    ];
    for (id, (who, tool)) in steps.iter().enumerate() {
        let status = within(Duration::from_secs(10), send(addr, who, id as u64, *tool)).await;
        assert_eq!(status, 200);
    }
    let checked = live_equals_check(&tooltap, steps.len() as u64, &violations, &recordings).await;
    let mut unlisted: Vec<u64> = checked
        .iter()
        .filter(|(_, found)| {
            found
                .iter()
                .any(|v| v["rule"] == "mcp.tools_call.name_unlisted")
        })
        .map(|(id, _)| number(id))
        .collect();
    unlisted.sort_unstable();
    let mut numbers: Vec<u64> = checked.keys().map(|id| number(id)).collect();
    numbers.sort_unstable();
    assert_eq!(
        unlisted,
        numbers[steps.len() - 1..],
        "only Alice's call of Bob's tool is unlisted: {checked:?}"
    );
    let mut credentials = std::collections::BTreeSet::new();
    for file in files_under(&recordings) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains("Bearer "), "a credential in {file:?}");
        for line in text.lines() {
            let line: Value = serde_json::from_str(line).expect("a JSON line");
            if let Some(credential) = line["credential"].as_str() {
                credentials.insert(credential.to_owned());
            }
        }
    }
    assert_eq!(
        credentials.len(),
        2,
        "one digest per caller: {credentials:?}"
    );
}

//! A route names its dialect: a path no dialect names is judged as its route says, and on a
//! route that names none it is reported `dialect_unknown` (forwarded, not judged, not recorded)
//! instead of being judged as Chat Completions — through the real proxy, with the violations
//! file and `/metrics` as the witnesses.

use std::time::Duration;

use serde_json::Value;

use crate::support::client::{exchange, request};
use crate::support::fixtures::settle;
use crate::support::metrics::assert_metric;
use crate::support::metrics::metrics;
use crate::support::proxy;
use crate::support::temp::temp_file;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;

const LIMIT: Duration = Duration::from_secs(20);

const ANTHROPIC_REQUEST: &str =
    include_str!("../fixtures/anthropic_response_tool_use_name_unknown/request.json");
const ANTHROPIC_RESPONSE: &str =
    include_str!("../fixtures/anthropic_response_tool_use_name_unknown/response.json");
const CHAT_REQUEST: &str = include_str!("../fixtures/buffered_arguments_not_json/request.json");
const CHAT_RESPONSE: &str = include_str!("../fixtures/buffered_arguments_not_json/response.json");

#[tokio::test]
async fn a_custom_path_is_judged_as_its_route_s_dialect_and_an_unnamed_one_is_reported() {
    let anthropic =
        Upstream::serving(Script::full(200, "application/json", ANTHROPIC_RESPONSE)).await;
    let chat = Upstream::serving(Script::full(200, "application/json", CHAT_RESPONSE)).await;
    let violations = temp_file("route-dialect.jsonl");
    let mut raw = proxy::raw_config(&chat.url());
    raw.inspect.violations = Some(violations.clone());
    raw.inspect.path_suffixes = Some(vec!["/chat/completions".into(), "/generate".into()]);
    let mut claude = proxy::route("claude", "/claude", &anthropic.url());
    claude.dialect = Some("anthropic".into());
    let mut plain = proxy::route("plain", "/plain", &chat.url());
    plain.dialect = Some("chat".into());
    raw.routes = vec![claude, plain];
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();

    for (path, body, answer) in [
        ("/claude/v1/generate", ANTHROPIC_REQUEST, ANTHROPIC_RESPONSE),
        ("/plain/v1/generate", CHAT_REQUEST, CHAT_RESPONSE),
        // The default route names no dialect, and neither does the path.
        ("/v1/generate", CHAT_REQUEST, CHAT_RESPONSE),
    ] {
        let got = within(LIMIT, exchange(addr, request(addr, "POST", path, body))).await;
        assert_eq!(got.status, 200, "{path}");
        assert_eq!(got.body, answer.as_bytes(), "{path}: forwarded unchanged");
    }
    let text = settle(&tooltap, 2).await;
    assert_metric!(
        text,
        "tooltap_exchanges_inspected_total",
        ["route=\"claude\"", "dialect=\"anthropic\""] == 1
    );
    assert_metric!(
        text,
        "tooltap_exchanges_inspected_total",
        ["route=\"plain\"", "dialect=\"chat\""] == 1
    );
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["route=\"default\"", "reason=\"dialect_unknown\""] == 1
    );
    assert_metric!(
        text,
        "tooltap_inspection_incomplete_total",
        ["reason=\"dialect_unknown\""] == 1
    );
    // Nothing counted later: the unnamed exchange was never inspected.
    let text = metrics(&tooltap).await;
    assert_metric!(text, "tooltap_exchanges_inspected_total", [] == 2);
    assert_metric!(
        text,
        "tooltap_violations_total",
        ["route=\"default\""] == 0,
        "an unnamed path is not judged as Chat"
    );

    let lines: Vec<Value> = std::fs::read_to_string(&*violations)
        .expect("violations file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    // Each exchange's inspection ends on its own schedule: the lines' order is not the
    // requests'.
    let mut seen: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|line| {
            let field = |name: &str| line[name].as_str().unwrap_or_default();
            (field("route"), field("dialect"), field("rule"))
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        vec![
            (
                "claude",
                "anthropic",
                "anthropic.response.tool_use_name_unknown"
            ),
            ("plain", "chat", "tool_call.arguments_not_json"),
        ],
        "{lines:#?}"
    );
}

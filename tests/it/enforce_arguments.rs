//! Enforce mode through the real proxy cuts a Responses stream at the argument fragment that
//! made the JSON impossible: the events before it reach the client whole, then the stream's
//! own error event naming `responses.output.arguments_invalid_json`, and none of the thousand
//! fragments the upstream had still to send.

use std::time::Duration;

use serde_json::json;

use crate::engine_typed_arguments::{Wire, schema};
use crate::support::client::{exchange, request};
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_responses_stream_is_cut_at_the_fragment_that_breaks_its_arguments() {
    let filler = format!("\"{}\"", "x".repeat(1000));
    let mut fragments = vec!["{\"path\":", "\"a.txt\",", "\"content\" ]"];
    fragments.extend(vec![filler.as_str(); 1000]);
    let events: Vec<String> = Wire::Responses
        .events(&fragments)
        .into_iter()
        .map(|event| String::from_utf8(event).expect("utf-8"))
        .collect();
    let chunks: Vec<&str> = events.iter().map(String::as_str).collect();
    let upstream = Upstream::serving(Script::sse(&chunks, Duration::from_millis(20))).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    let tooltap = proxy::start(raw).await;

    let body = Wire::Responses.request(&schema(json!({"type": "string"})));
    let body = String::from_utf8(body).expect("utf-8");
    let addr = tooltap.local_addr();
    let cut = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/responses", &body)),
    )
    .await;
    assert_eq!(cut.status, 200);
    // The item and fragments 1 and 2 passed; fragment 3's event is replaced by the error event
    // (numbered after it), and nothing after it reaches the client.
    let breaking = usize::try_from(Wire::Responses.first_fragment()).expect("small") + 2;
    let passed = events[..breaking].concat();
    let (_, event) = cut.cut_after(passed.as_bytes(), "event: error\ndata: ");
    assert_eq!(event["param"], Wire::Responses.not_json());
    assert_eq!(event["sequence_number"], breaking + 1);
}

//! Proof that the good runs of `clients` were judged, not only forwarded: the same Python SDK
//! server behind `tooltap proxy --inject` with a quirk that breaks a `tools/call` answer
//! against the `outputSchema` its `tools/list` declared. The rule, which needs the catalog the
//! conversation store built from the live `tools/list`, fires on the `get_weather_data` call
//! (and on no other exchange; once per member off the schema), live and by `tooltap check`;
//! the SDK client rejects the answer.

use super::Tap;
use crate::support::clients::run_python;
use crate::support::mcp::start_python_server;

/// Each injected quirk and the one rule it must trip.
const CASES: [(&str, &str); 2] = [
    (
        "mcp-structured-content-dropped",
        "mcp.tools_call.structured_content_missing",
    ),
    (
        "mcp-output-off-schema",
        "mcp.tools_call.structured_content_schema",
    ),
];

#[tokio::test]
async fn a_call_answered_off_the_listed_output_schema_is_reported_live_and_by_check() {
    for (body, state) in [("json", "stateful"), ("sse", "stateless")] {
        let server = start_python_server(body, state).await;
        for (quirk, rule) in CASES {
            let mut tap = Tap::start_with(&server, &["--inject", quirk]).await;
            let limit = std::time::Duration::from_secs(120);
            let output = run_python("mcp_check.py", &[tap.url().as_str(), "legacy"], limit).await;
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                !output.status.success(),
                "{body}/{state} {quirk}: the Python client accepted the broken answer: {}",
                String::from_utf8_lossy(&output.stdout)
            );
            assert!(
                stderr.contains("structured"),
                "{body}/{state} {quirk}: another failure than the structured content: {stderr}"
            );
            let live = tap.stop_and_compare_with_check().await;
            let exchanges = live
                .values()
                .filter(|rules| rules.iter().any(|r| r == rule))
                .count();
            assert_eq!(
                exchanges, 1,
                "{body}/{state} {quirk}: {rule} on exactly the get_weather_data call: {live:?}"
            );
        }
    }
}

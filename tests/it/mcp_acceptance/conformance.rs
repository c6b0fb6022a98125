//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, its 30 active
//! server scenarios) against its own test server (`tests/clients/mcp/conformance_server.ts`),
//! direct and through `tooltap proxy`: the same verdict per scenario, every scenario passing,
//! and no error-severity violation from tooltap on that traffic.
//!
//! The one scenario tooltap changes by design is `dns-rebinding-protection`: its
//! DNSRebindingRejected check sends `Host: evil.example.com` and expects a 4xx, but tooltap, a
//! reverse proxy, sends the upstream's own `Host`, so the server answers 200. Through tooltap it
//! gives one check passed, one failed; a server behind tooltap cannot tell a rebinding client
//! by its `Host`.
//!
//! The scenarios where the server sends a request to the client during a tool call (sampling,
//! elicitation) run against the upstream fix of conformance#407 (`conformance_server.ts`): the
//! v0.1.16 server put that request on the session's standalone GET stream, which the client opens
//! concurrently with its `tools/call`, and a proxy often delivers the GET second; the request was
//! then parked and the scenario timed out after 60 s (docs/mcp-acceptance.md has the figures).
//! With the fix the request rides the `tools/call` POST's own stream, so one full run each way
//! gives every verdict: no scenario is run again.

use std::collections::BTreeMap;

use super::{INSPECTED, MCP_LABEL, Tap};
use crate::support::mcp::{conformance, start_conformance_server};
use crate::support::metrics::metric_sum;

/// The scenario whose verdict tooltap changes by design (see the module doc).
const HOST_REWRITTEN: &str = "dns-rebinding-protection";

/// The active suite's scenario count in 0.1.16 (`conformance list --server`, less the pending
/// `json-schema-2020-12` and `server-sse-polling`).
const ACTIVE_SCENARIOS: usize = 30;

/// The suite's verdict per scenario at `url`, `(passed, failed)` checks, from one full run.
async fn verdicts(url: &str) -> BTreeMap<String, (u32, u32)> {
    let run = conformance(url, &[]).await;
    assert_eq!(run.scenarios.len(), ACTIVE_SCENARIOS, "{}", run.output);
    let failing: Vec<_> = run
        .scenarios
        .iter()
        .filter(|(name, verdict)| verdict.1 > 0 && *name != HOST_REWRITTEN)
        .collect();
    assert!(
        failing.is_empty(),
        "{failing:?} failed at {url}: {}",
        run.output
    );
    run.scenarios
}

#[tokio::test]
async fn the_conformance_suite_gives_the_same_verdict_through_tooltap() {
    let server = start_conformance_server().await;
    let direct = verdicts(&server.url()).await;
    assert_eq!(direct.get(HOST_REWRITTEN), Some(&(2, 0)), "{direct:?}");

    let mut tap = Tap::start(&server).await;
    let mut through = verdicts(&tap.url()).await;
    assert_eq!(through.remove(HOST_REWRITTEN), Some((1, 1)), "{through:?}");
    let mut expected = direct.clone();
    expected.remove(HOST_REWRITTEN);
    assert_eq!(through, expected, "another verdict through tooltap");
    // The suite's last exchanges may still be in inspection: wait for those the first scrape
    // counted, then every recording must be an mcp one.
    let metrics = tap.metrics_after(1).await;
    let inspected = metric_sum(&metrics, INSPECTED, &[MCP_LABEL]);
    let recorded = tap.stop_and_check(None).await;
    assert!(recorded as u64 >= inspected, "{recorded} < {inspected}");
    assert!(recorded > 100, "only {recorded} exchanges recorded");
}

//! HTTPS upstreams: certificates are verified; a private CA works once configured as
//! `tls.extra_ca`, and without it the client gets a clear `upstream_tls` error.

use http::Version;

use crate::support::client::{exchange, request};
use crate::support::pki::TestPki;
use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use tooltap::proxy::server::RunningProxy;

/// An HTTPS upstream answering `body` under a private CA, and tooltap trusting that CA; the
/// CA file's path, for the caller to remove.
pub async fn private_ca_upstream_and_proxy(
    content_type: &'static str,
    body: &'static str,
) -> (Upstream, RunningProxy, std::path::PathBuf) {
    let pki = TestPki::new();
    let upstream = Upstream::start(
        move |_| Script::full(200, content_type, body),
        Some(pki.server_config.clone()),
    )
    .await;
    let ca_path = pki.write_ca();
    let mut raw = proxy::raw_config(&upstream.url());
    raw.tls.extra_ca = Some(ca_path.clone());
    (upstream, proxy::start(raw).await, ca_path)
}

#[tokio::test]
async fn a_private_ca_upstream_is_verified_with_extra_ca_and_speaks_h2() {
    let (mut upstream, tooltap, ca_path) =
        private_ca_upstream_and_proxy("application/json", r#"{"ok":true}"#).await;
    let addr = tooltap.local_addr();

    let response = exchange(addr, request(addr, "POST", "/v1/chat/completions", "{}")).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, r#"{"ok":true}"#);
    let seen = upstream.next_request().await;
    assert_eq!(seen.version, Version::HTTP_2, "ALPN should pick h2");
    assert_eq!(seen.body, "{}");
    std::fs::remove_file(ca_path).ok();
}

#[tokio::test]
async fn a_private_ca_upstream_without_extra_ca_gives_502_upstream_tls() {
    let pki = TestPki::new();
    let upstream = Upstream::start(
        |_| Script::full(200, "text/plain", "must not be reached"),
        Some(pki.server_config.clone()),
    )
    .await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();

    let response = exchange(addr, request(addr, "GET", "/v1/models", "")).await;
    assert_eq!(response.status, 502);
    let body = response.json();
    assert_eq!(body["error"]["type"], "tooltap_error");
    assert_eq!(body["error"]["code"], "upstream_tls");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains("certificate"), "{message}");
    assert!(message.contains("extra_ca"), "no hint in: {message}");
}

//! What can go wrong between tooltap and an upstream, before the response head arrives.
//!
//! Input: the failures of [`super::connect`] (DNS, TCP, TLS), of hyper's handshake and of the
//! request itself, and the pool's own bound. Output: an [`UpstreamError`] that
//! `forward::classify` turns into the [`crate::proxy::error::ProxyError`] a client sees. Each
//! variant keeps its cause, so the classification can look inside (a `rustls::Error` within an
//! `io::Error`, a slow or broken client body within a `hyper::Error`); their messages name the
//! step only, and the cause chain says the rest.

use std::io;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The host name did not resolve, or resolved to nothing.
    #[error("dns error")]
    Resolve(#[source] io::Error),
    /// Every resolved address refused or failed the TCP connect.
    #[error("tcp connect error")]
    Connect(#[source] io::Error),
    /// The TCP connect did not finish within `timeouts.connect`.
    #[error("tcp connect timed out after {0:?}")]
    ConnectTimeout(Duration),
    /// The TLS handshake failed (a refused certificate is a `rustls::Error` inside).
    #[error("tls handshake error")]
    Tls(#[source] io::Error),
    /// hyper's HTTP/1.1 or HTTP/2 handshake on a fresh connection failed.
    #[error("http handshake error")]
    Handshake(#[source] hyper::Error),
    /// The request failed on its connection (the upstream broke off, spoke bad HTTP, or the
    /// client's own request body failed while it was being sent).
    #[error("request failed")]
    Request(#[source] hyper::Error),
    /// `proxy.upstream_max_connections` were open and busy for the whole wait.
    #[error("{open} connections open and busy (proxy.upstream_max_connections) for {waited:?}")]
    Busy { open: usize, waited: Duration },
}

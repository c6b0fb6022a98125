//! The errors a client can see from tooltap itself, and whose fault each one is.
//!
//! Input: failures classified by [`crate::proxy::forward`] (connect, TLS, timeouts, broken request
//! bodies). Output: a [`ProxyError`] that the service logs with its [`Fault`] and turns into an
//! HTTP response in the OpenAI error shape, `{"error":{"message","type","code"}}`, so the official
//! SDKs print one clear line. Upstream 4xx/5xx responses are *not* errors: they pass unchanged and
//! never reach this module.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};

use crate::answer::error_response;

/// Who has to act to fix an error. Logged with every error so an operator knows where to look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The upstream is down, slow, or presented a certificate we cannot verify.
    Upstream,
    /// The client sent something we cannot forward (or went away mid-request).
    Client,
    /// A bug or a resource limit inside tooltap.
    Tooltap,
}

impl Fault {
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::Upstream => "upstream",
            Fault::Client => "client",
            Fault::Tooltap => "tooltap",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong while forwarding one exchange. `message` texts are meant for humans; the
/// stable machine-readable part is [`ProxyError::code`].
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("tooltap could not connect to upstream {upstream}: {detail}")]
    UpstreamUnreachable { upstream: String, detail: String },
    #[error("upstream {upstream} did not {phase} within {after:?}")]
    UpstreamTimeout {
        upstream: String,
        phase: TimeoutPhase,
        after: Duration,
    },
    #[error("TLS handshake with upstream {upstream} failed: {detail}")]
    UpstreamTls { upstream: String, detail: String },
    #[error("tooltap has no free connection to upstream {upstream}: {detail}")]
    UpstreamBusy { upstream: String, detail: String },
    #[error("upstream {upstream} broke the exchange: {detail}")]
    UpstreamProtocol { upstream: String, detail: String },
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("tooltap internal error: {0}")]
    Internal(String),
}

/// Which deadline an upstream missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    Connect,
    FirstByte,
}

impl fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "accept a connection",
            TimeoutPhase::FirstByte => "send a response head",
        })
    }
}

impl ProxyError {
    /// The stable `error.code` clients and tests match on.
    pub fn code(&self) -> &'static str {
        match self {
            ProxyError::UpstreamUnreachable { .. } => "upstream_unreachable",
            ProxyError::UpstreamTimeout { .. } => "upstream_timeout",
            ProxyError::UpstreamTls { .. } => "upstream_tls",
            ProxyError::UpstreamBusy { .. } => "upstream_busy",
            ProxyError::UpstreamProtocol { .. } => "upstream_protocol",
            ProxyError::BadRequest(_) => "bad_request",
            ProxyError::Internal(_) => "internal",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::UpstreamUnreachable { .. } => StatusCode::BAD_GATEWAY,
            ProxyError::UpstreamTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            ProxyError::UpstreamTls { .. } => StatusCode::BAD_GATEWAY,
            ProxyError::UpstreamBusy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ProxyError::UpstreamProtocol { .. } => StatusCode::BAD_GATEWAY,
            ProxyError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ProxyError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn fault(&self) -> Fault {
        match self {
            ProxyError::UpstreamUnreachable { .. }
            | ProxyError::UpstreamTimeout { .. }
            | ProxyError::UpstreamTls { .. }
            | ProxyError::UpstreamProtocol { .. } => Fault::Upstream,
            ProxyError::BadRequest(_) => Fault::Client,
            ProxyError::UpstreamBusy { .. } | ProxyError::Internal(_) => Fault::Tooltap,
        }
    }

    /// The whole response; the body type is chosen by the caller (see `forward::body::full`).
    pub fn to_response(&self) -> Response<Bytes> {
        error_response(
            self.status(),
            "tooltap_error",
            self.code(),
            &self.to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_has_the_openai_shape() {
        let error = ProxyError::UpstreamUnreachable {
            upstream: "http://127.0.0.1:9".into(),
            detail: "connection refused".into(),
        };
        let response = error.to_response();
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        let parsed: serde_json::Value = serde_json::from_slice(response.body()).expect("json");
        assert_eq!(parsed["error"]["type"], "tooltap_error");
        assert_eq!(parsed["error"]["code"], "upstream_unreachable");
        let message = parsed["error"]["message"].as_str().expect("message");
        assert!(message.contains("127.0.0.1:9"), "{message}");
        assert_eq!(error.fault(), Fault::Upstream);
    }

    #[test]
    fn timeouts_are_504_and_bad_requests_are_the_clients_fault() {
        let timeout = ProxyError::UpstreamTimeout {
            upstream: "u".into(),
            phase: TimeoutPhase::FirstByte,
            after: Duration::from_millis(300),
        };
        assert_eq!(timeout.status(), StatusCode::GATEWAY_TIMEOUT);
        let bad = ProxyError::BadRequest("x".into());
        assert_eq!(
            (bad.status(), bad.fault()),
            (StatusCode::BAD_REQUEST, Fault::Client)
        );
    }
}

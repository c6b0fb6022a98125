//! Turning a failed upstream request into a [`ProxyError`] that says whose fault it was.
//!
//! Input: the hyper-util client error for one exchange. Output: `bad_request` when the client's
//! own request body broke or came too slowly, `upstream_tls` when rustls refused the handshake, `upstream_timeout`
//! when the TCP connect timed out, `upstream_unreachable` for other connect failures (refused,
//! DNS) and `upstream_protocol` for anything after the connection was made.
//!
//! The cause chain is walked by hand because `std::io::Error::source()` skips the error it
//! wraps (it returns the *inner error's* source); `get_ref()` is the only way to reach the
//! `rustls::Error` that tokio-rustls puts inside an `io::Error`.

use std::error::Error as StdError;
use std::io;
use std::time::Duration;

use hyper_util::client::legacy::Error as ClientError;

use super::body::ClientBodyError;
use super::slow_body::SlowRequestBody;
use crate::proxy::error::{ProxyError, TimeoutPhase};
use crate::proxy::route::UpstreamUrl;

pub fn client_error(
    error: &ClientError,
    upstream: &UpstreamUrl,
    connect_timeout: Duration,
) -> ProxyError {
    let upstream_name = upstream.as_str().to_owned();
    let detail = causes(error)
        .skip(1)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ");
    for cause in causes(error) {
        if let Some(slow) = cause.downcast_ref::<SlowRequestBody>() {
            return ProxyError::BadRequest(slow.to_string());
        }
        if let Some(body_error) = cause.downcast_ref::<ClientBodyError>() {
            return ProxyError::BadRequest(format!("{body_error}: {}", body_error.0));
        }
        if let Some(tls_error) = cause.downcast_ref::<rustls::Error>() {
            let hint = match tls_error {
                rustls::Error::InvalidCertificate(_) => {
                    " (if the upstream uses a private CA, add it with [tls] extra_ca)"
                }
                _ => "",
            };
            return ProxyError::UpstreamTls {
                upstream: upstream_name,
                detail: format!("{tls_error}{hint}"),
            };
        }
    }
    if error.is_connect() {
        let timed_out = causes(error)
            .filter_map(|cause| cause.downcast_ref::<io::Error>())
            .any(|io_error| io_error.kind() == io::ErrorKind::TimedOut);
        if timed_out {
            return ProxyError::UpstreamTimeout {
                upstream: upstream_name,
                phase: TimeoutPhase::Connect,
                after: connect_timeout,
            };
        }
        return ProxyError::UpstreamUnreachable {
            upstream: upstream_name,
            detail,
        };
    }
    ProxyError::UpstreamProtocol {
        upstream: upstream_name,
        detail,
    }
}

/// `error` and every cause below it, looking inside `io::Error`s.
fn causes<'e>(
    error: &'e (dyn StdError + 'static),
) -> impl Iterator<Item = &'e (dyn StdError + 'static)> {
    std::iter::successors(
        Some(error),
        |&current: &&'e (dyn StdError + 'static)| match current.downcast_ref::<io::Error>() {
            Some(io_error) => io_error
                .get_ref()
                .map(|inner| inner as &(dyn StdError + 'static)),
            None => current.source(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] io::Error);

    #[test]
    fn causes_look_inside_io_errors() {
        let tls = rustls::Error::General("bad".into());
        let outer = Outer(io::Error::other(tls));
        let found = causes(&outer).any(|cause| cause.downcast_ref::<rustls::Error>().is_some());
        assert!(found, "rustls error hidden inside io::Error was not found");
    }
}

//! Turning a failed upstream request into a [`ProxyError`] that says whose fault it was.
//!
//! Input: the [`UpstreamError`] of one exchange. Output: `bad_request` when the client's own
//! request body broke or came too slowly, `upstream_tls` when rustls refused the handshake,
//! `upstream_timeout` when the TCP connect timed out, `upstream_unreachable` for other connect
//! failures (refused, DNS, a handshake cut short), `upstream_busy` when the pool stayed at
//! `proxy.upstream_max_connections`, and `upstream_protocol` for anything after the connection
//! was made.
//!
//! The cause chain is walked by hand because `std::io::Error::source()` skips the error it
//! wraps (it returns the *inner error's* source); `get_ref()` is the only way to reach the
//! `rustls::Error` that tokio-rustls puts inside an `io::Error`.

use std::error::Error as StdError;
use std::io;
use std::time::Duration;

use super::body::ClientBodyError;
use super::slow_body::SlowRequestBody;
use crate::proxy::error::{ProxyError, TimeoutPhase};
use crate::route::UpstreamUrl;
use crate::upstream::UpstreamError;

pub fn upstream_error(
    error: &UpstreamError,
    upstream: &UpstreamUrl,
    connect_timeout: Duration,
) -> ProxyError {
    let upstream_name = upstream.as_str().to_owned();
    // A failed request is named by its causes alone ("connection closed before message
    // completed"); the other steps' names ("tcp connect error") lead their causes.
    let skip = usize::from(matches!(error, UpstreamError::Request(_)));
    let detail = || {
        causes(error)
            .skip(skip)
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(": ")
    };
    match error {
        UpstreamError::ConnectTimeout(_) => ProxyError::UpstreamTimeout {
            upstream: upstream_name,
            phase: TimeoutPhase::Connect,
            after: connect_timeout,
        },
        UpstreamError::Resolve(_) | UpstreamError::Connect(_) => ProxyError::UpstreamUnreachable {
            upstream: upstream_name,
            detail: detail(),
        },
        UpstreamError::Tls(_) => match tls_refusal(error) {
            Some(tls_error) => {
                let hint = match tls_error {
                    rustls::Error::InvalidCertificate(_) => {
                        " (if the upstream uses a private CA, add it with [tls] extra_ca)"
                    }
                    _ => "",
                };
                ProxyError::UpstreamTls {
                    upstream: upstream_name,
                    detail: format!("{tls_error}{hint}"),
                }
            }
            None => ProxyError::UpstreamUnreachable {
                upstream: upstream_name,
                detail: detail(),
            },
        },
        UpstreamError::Busy { .. } => ProxyError::UpstreamBusy {
            upstream: upstream_name,
            detail: error.to_string(),
        },
        UpstreamError::Handshake(_) | UpstreamError::Request(_) => {
            for cause in causes(error) {
                if let Some(slow) = cause.downcast_ref::<SlowRequestBody>() {
                    return ProxyError::BadRequest(slow.to_string());
                }
                if let Some(body_error) = cause.downcast_ref::<ClientBodyError>() {
                    return ProxyError::BadRequest(format!("{body_error}: {}", body_error.0));
                }
            }
            ProxyError::UpstreamProtocol {
                upstream: upstream_name,
                detail: detail(),
            }
        }
    }
}

/// The `rustls::Error` somewhere below `error`, if rustls refused the handshake.
fn tls_refusal(error: &UpstreamError) -> Option<&rustls::Error> {
    causes(error).find_map(|cause| cause.downcast_ref::<rustls::Error>())
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

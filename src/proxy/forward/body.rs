//! The body types on both sides of the proxy, and the only conversions into them.
//!
//! Input: hyper's `Incoming` bodies (the client's request, the upstream's response) and tooltap's
//! own error bodies. Output: [`RequestBody`] (sent upstream) and [`ProxyBody`] (sent to the
//! client). Both are boxed so a later wrapper (the tee) changes what goes *inside* the box, not
//! the types the service, client and server agree on. Boxing delegates `size_hint` and
//! `is_end_stream`, so Content-Length, chunking and h2 END_STREAM stay what they were.

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use super::flush_first::FlushFirst;
use crate::tap::tee::TeeBody;
use crate::tap::whole::WholeCopy;

/// Errors inside a body stream, and what the upstream receives: defined beside the upstream
/// client that sends it.
pub use crate::upstream::{BodyError, RequestBody};

/// What `poll_frame` returns in every body wrapper on the proxy path.
pub type PolledFrame = std::task::Poll<Option<Result<http_body::Frame<Bytes>, BodyError>>>;

/// What the client receives.
pub type ProxyBody = UnsyncBoxBody<Bytes, BodyError>;

/// Marks a failure of the *client's* request body (it went away, or sent bad framing), so
/// `forward` can blame the client instead of the upstream when the upstream request then fails.
#[derive(Debug, thiserror::Error)]
#[error("the client's request body failed")]
pub struct ClientBodyError(#[source] pub hyper::Error);

pub fn from_client(body: Incoming) -> RequestBody {
    body.map_err(|error| Box::new(ClientBodyError(error)) as BodyError)
        .boxed_unsync()
}

/// The upstream's response body (behind whatever layers the exchange put on it) behind
/// flush-first, the client's side of every response.
pub fn from_upstream<B>(body: B) -> ProxyBody
where
    B: http_body::Body<Data = Bytes, Error = BodyError> + Send + Unpin + 'static,
{
    FlushFirst::new(body).boxed_unsync()
}

/// A complete in-memory body (tooltap's own error responses).
pub fn full(bytes: Bytes) -> ProxyBody {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The client's request body behind a tee (the inspector gets the body whole, copied as it
/// passed).
pub fn from_client_tee(body: TeeBody<Incoming, WholeCopy>) -> RequestBody {
    body.map_err(|error| Box::new(ClientBodyError(error)) as BodyError)
        .boxed_unsync()
}

//! The upstream's response body, carrying the lease of the HTTP/1.1 connection it arrives on.
//!
//! Input: hyper's `Incoming` body and, for HTTP/1.1, the connection's `SendRequest` handle.
//! Output: the same frames, unchanged. When the body is dropped (read to its end, or abandoned),
//! the handle goes back to its pool: at once when hyper already reports the connection ready for
//! the next request (the common case: its task reads the end of the body before the reader sees
//! it), otherwise through a small task that waits for it to become ready or to close. Nothing
//! happens inside `poll_frame` but the inner body's own poll.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1;

use super::RequestBody;
use super::pool::Pool;

/// An HTTP/1.1 connection lent to one exchange; returned to `pool` when the exchange is done.
pub(super) struct Lease {
    pub sender: http1::SendRequest<RequestBody>,
    pub pool: Arc<Pool>,
}

impl Lease {
    fn release(self) {
        let Lease { mut sender, pool } = self;
        if sender.is_ready() {
            pool.put_idle(sender);
        } else if !sender.is_closed()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if sender.ready().await.is_ok() {
                    pool.put_idle(sender);
                }
            });
        }
    }
}

/// An upstream response body (see the module doc).
pub struct ResponseBody {
    inner: Incoming,
    lease: Option<Lease>,
}

impl ResponseBody {
    pub(super) fn new(inner: Incoming, lease: Option<Lease>) -> ResponseBody {
        ResponseBody { inner, lease }
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            lease.release();
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

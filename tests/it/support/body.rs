//! A body fed from a Tokio channel, one frame per message: the test's way to stream bytes with
//! its own pacing (upstream responses, client uploads). Sending fails once hyper has dropped the
//! body, which is how the upstream notices a connection that went away. Sending `Err(Aborted)`
//! makes hyper abort the message mid-body (an HTTP/1.1 chunked body without its last chunk).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
#[error("body aborted by the test")]
pub struct Aborted;

pub struct ChannelBody(mpsc::Receiver<Result<Bytes, Aborted>>);

pub fn channel(capacity: usize) -> (mpsc::Sender<Result<Bytes, Aborted>>, ChannelBody) {
    let (sender, receiver) = mpsc::channel(capacity);
    (sender, ChannelBody(receiver))
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Aborted;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Aborted>>> {
        self.0
            .poll_recv(cx)
            .map(|message| message.map(|result| result.map(Frame::data)))
    }
}

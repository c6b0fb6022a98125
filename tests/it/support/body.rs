//! A body fed from a Tokio channel, one frame per message: the test's way to stream bytes with
//! its own pacing (upstream responses, client uploads). Sending fails once hyper has dropped the
//! body, which is how the upstream notices a connection that went away.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame};
use tokio::sync::mpsc;

pub struct ChannelBody(mpsc::Receiver<Bytes>);

pub fn channel(capacity: usize) -> (mpsc::Sender<Bytes>, ChannelBody) {
    let (sender, receiver) = mpsc::channel(capacity);
    (sender, ChannelBody(receiver))
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|bytes| bytes.map(|bytes| Ok(Frame::data(bytes))))
    }
}

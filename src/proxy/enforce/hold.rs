//! Holding a body in memory, bounded, for enforce mode; and giving back what was held when the
//! bound is hit, so nothing is lost.
//!
//! [`hold`] reads frames until the end or until `limit` bytes. Within the limit it returns the
//! whole body. Past it, it returns a [`Prefixed`] body — the frames read so far, then the rest of
//! the original — so the caller can forward the exchange unenforced instead of failing it.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;

use crate::proxy::forward::body::{BodyError, PolledFrame};

type Boxed = UnsyncBoxBody<Bytes, BodyError>;

/// What holding a body gave.
pub enum Held {
    /// The whole body, within the limit.
    Whole(Bytes),
    /// Over the limit: the body, intact, to forward without enforcement.
    TooLarge(Prefixed),
    /// The body failed while being read.
    Failed(BodyError),
}

/// Read `body` into memory, up to `limit` bytes.
pub async fn hold(mut body: Boxed, limit: usize) -> Held {
    let mut frames: VecDeque<Bytes> = VecDeque::new();
    let mut size = 0;
    loop {
        match body.frame().await {
            None => break,
            Some(Err(error)) => return Held::Failed(error),
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue; // trailers: not part of what is judged, and HTTP/1 drops them
                };
                size += data.len();
                frames.push_back(data);
                if size > limit {
                    return Held::TooLarge(Prefixed { frames, rest: body });
                }
            }
        }
    }
    let mut whole = BytesMut::with_capacity(size);
    for frame in frames {
        whole.extend_from_slice(&frame);
    }
    Held::Whole(whole.freeze())
}

/// Frames already read, then the rest of the body they came from.
pub struct Prefixed {
    frames: VecDeque<Bytes>,
    rest: Boxed,
}

impl Body for Prefixed {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame {
        if let Some(bytes) = self.frames.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(bytes))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let held: u64 = self.frames.iter().map(|f| f.len() as u64).sum();
        let rest = self.rest.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(held + rest.lower());
        if let Some(upper) = rest.upper() {
            hint.set_upper(held + upper);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    fn boxed(text: &'static str) -> Boxed {
        Full::new(Bytes::from_static(text.as_bytes()))
            .map_err(|never| match never {})
            .boxed_unsync()
    }

    #[tokio::test]
    async fn within_the_limit_the_whole_body_is_held() {
        match hold(boxed("hello"), 5).await {
            Held::Whole(bytes) => assert_eq!(bytes, "hello"),
            _ => panic!("expected the whole body"),
        }
    }

    #[tokio::test]
    async fn over_the_limit_nothing_is_lost() {
        let Held::TooLarge(prefixed) = hold(boxed("hello world"), 4).await else {
            panic!("expected too large");
        };
        let all = prefixed.collect().await.expect("body").to_bytes();
        assert_eq!(all, "hello world");
    }
}

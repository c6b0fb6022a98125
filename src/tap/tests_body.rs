//! A body for the copies' tests: the given byte strings, each its own data frame, then the end.

use bytes::Bytes;
use http_body_util::StreamBody;

/// A body of `frames`, each its own frame.
pub fn body_of(
    frames: &[&'static [u8]],
) -> impl http_body::Body<Data = Bytes, Error = std::convert::Infallible> + Unpin {
    let chunks: Vec<Result<http_body::Frame<Bytes>, std::convert::Infallible>> = frames
        .iter()
        .map(|frame| Ok(http_body::Frame::data(Bytes::from_static(frame))))
        .collect();
    StreamBody::new(futures_util::stream::iter(chunks))
}

//! Unit tests of the tee: frames pass unchanged, every ending is delivered exactly once, and a
//! full tap drops and counts instead of pushing back.

use super::*;
use http_body_util::BodyExt;
use std::collections::VecDeque;

/// A scripted body: yields its frames in order, then ends. `Unpin`, like hyper's `Incoming`.
/// With `knows_its_end`, it reports `is_end_stream()` once no frame is left, as hyper's body does
/// when its Content-Length is reached.
struct Scripted {
    frames: VecDeque<Result<Frame<Bytes>, String>>,
    exact_len: Option<u64>,
    knows_its_end: bool,
}

impl Scripted {
    fn frames(frames: Vec<Bytes>) -> Self {
        Scripted {
            frames: frames.into_iter().map(|b| Ok(Frame::data(b))).collect(),
            exact_len: None,
            knows_its_end: false,
        }
    }

    fn data(chunks: &[&'static str]) -> Self {
        Scripted::frames(
            chunks
                .iter()
                .map(|c| Bytes::from_static(c.as_bytes()))
                .collect(),
        )
    }
}

impl Body for Scripted {
    type Data = Bytes;
    type Error = String;
    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, String>>> {
        Poll::Ready(self.get_mut().frames.pop_front())
    }
    fn size_hint(&self) -> SizeHint {
        match self.exact_len {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
    fn is_end_stream(&self) -> bool {
        self.knows_its_end && self.frames.is_empty()
    }
}

async fn drain(rx: &mut TapReceiver) -> Vec<Bytes> {
    let mut out = Vec::new();
    while let Some(event) = rx.data.recv().await {
        out.push(event.bytes);
    }
    out
}

#[tokio::test]
async fn frames_pass_unchanged_and_are_copied() {
    let (tap, mut rx) = tap(16);
    let mut body = TeeBody::new(Scripted::data(&["data: a\n\n", "data: b\n\n"]), tap);
    let mut seen = Vec::new();
    while let Some(frame) = body.frame().await {
        seen.push(frame.expect("frame").into_data().expect("data"));
    }
    assert_eq!(seen, vec!["data: a\n\n", "data: b\n\n"]);
    drop(body);
    assert_eq!(drain(&mut rx).await, seen);
    let end = rx.end.await.expect("end delivered");
    assert_eq!(end.ending, Ending::Complete);
    assert_eq!((end.dropped_frames, end.lossy), (0, false));
}

#[tokio::test]
async fn a_full_tap_drops_counts_and_still_delivers_the_end() {
    let (tap, mut rx) = tap(2);
    let chunks = ["1", "2", "3", "4", "5"];
    let mut body = TeeBody::new(Scripted::data(&chunks), tap);
    let mut forwarded = 0;
    while let Some(frame) = body.frame().await {
        frame.expect("frame");
        forwarded += 1;
    }
    // The client got every frame although nobody drained the tap.
    assert_eq!(forwarded, 5);
    assert_eq!(drain(&mut rx).await, vec!["1", "2"]);
    let end = rx.end.await.expect("end delivered");
    assert_eq!(end.ending, Ending::Complete);
    assert!(end.lossy);
    assert_eq!(end.dropped_frames, 3);
}

#[tokio::test]
async fn dropping_before_the_end_reports_dropped() {
    let (tap, mut rx) = tap(16);
    let mut body = TeeBody::new(Scripted::data(&["x", "y"]), tap);
    let first = body.frame().await.expect("one frame").expect("ok");
    assert_eq!(first.into_data().expect("data"), "x");
    drop(body);
    assert_eq!(drain(&mut rx).await, vec!["x"]);
    assert_eq!(rx.end.await.expect("end").ending, Ending::ReaderGone);
}

#[tokio::test]
async fn an_error_mid_stream_is_the_ending() {
    let (tap, rx) = tap(16);
    let mut inner = Scripted::data(&["x"]);
    inner.frames.push_back(Err("connection reset".into()));
    let mut body = TeeBody::new(inner, tap);
    assert!(body.frame().await.expect("frame").is_ok());
    assert_eq!(
        body.frame().await.expect("error frame").unwrap_err(),
        "connection reset"
    );
    drop(body);
    let end = rx.end.await.expect("end");
    assert_eq!(end.ending, Ending::UpstreamBroke("connection reset".into()));
}

#[tokio::test]
async fn trailers_end_the_tap_once() {
    let (tap, rx) = tap(16);
    let mut inner = Scripted::data(&["x"]);
    inner
        .frames
        .push_back(Ok(Frame::trailers(http::HeaderMap::new())));
    let mut body = TeeBody::new(inner, tap);
    while body.frame().await.is_some() {}
    drop(body); // dropping after the end must not replace the ending with Dropped
    assert_eq!(rx.end.await.expect("end").ending, Ending::Trailers);
}

#[tokio::test]
async fn a_closed_inspector_never_disturbs_the_body() {
    let (tap, rx) = tap(1);
    drop(rx);
    let mut body = TeeBody::new(Scripted::data(&["a", "b", "c"]), tap);
    let mut n = 0;
    while let Some(frame) = body.frame().await {
        frame.expect("frame");
        n += 1;
    }
    assert_eq!(n, 3);
}

#[tokio::test]
async fn a_consumer_that_stops_copying_gets_the_frames_sent_and_the_end_not_a_hole() {
    let (tap, mut rx) = tap(16);
    let mut body = TeeBody::new(Scripted::data(&["a", "b", "c", "d"]), tap);
    let first = body.frame().await.expect("a").expect("frame");
    assert_eq!(rx.data.recv().await.expect("copied").bytes, "a");
    rx.data.stop_copying();
    let mut seen = vec![first.into_data().expect("data")];
    while let Some(frame) = body.frame().await {
        seen.push(frame.expect("frame").into_data().expect("data"));
    }
    assert_eq!(
        seen,
        vec!["a", "b", "c", "d"],
        "the body is forwarded whole"
    );
    assert!(
        drain(&mut rx).await.is_empty(),
        "nothing copied after the stop"
    );
    let end = rx.end.await.expect("end delivered");
    assert_eq!(end.ending, Ending::Complete);
    assert_eq!(
        (
            end.skipped_frames,
            end.dropped_frames,
            end.lossy,
            end.copied_frames
        ),
        (3, 0, false, 1)
    );
    assert_eq!(rx.data.shared.queued.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_stop_after_an_overflow_leaves_the_exchange_lossy() {
    let (tap, mut rx) = tap(1);
    let mut body = TeeBody::new(Scripted::data(&["a", "b", "c"]), tap);
    body.frame().await.expect("a").expect("frame");
    body.frame().await.expect("b").expect("frame");
    rx.data.stop_copying();
    while body.frame().await.is_some() {}
    drop(body);
    assert_eq!(drain(&mut rx).await, vec!["a"]);
    let end = rx.end.await.expect("end delivered");
    assert_eq!(
        (end.dropped_frames, end.skipped_frames, end.lossy),
        (2, 0, true),
        "the hole came first: every frame after it is a drop"
    );
}

#[tokio::test]
async fn size_hint_and_end_of_stream_are_delegated() {
    let (tap, mut rx) = tap(1);
    let mut inner = Scripted::data(&["abc"]);
    inner.exact_len = Some(3);
    inner.knows_its_end = true;
    let mut body = TeeBody::new(inner, tap);
    assert_eq!(body.size_hint().exact(), Some(3));
    assert!(!body.is_end_stream(), "a frame is left");
    let frame = body.frame().await.expect("a frame").expect("ok");
    assert_eq!(frame.into_data().expect("data"), "abc");
    assert!(body.is_end_stream(), "the inner body says it is over");
    // hyper drops a body that reports its end without polling it again: that is Complete.
    drop(body);
    assert_eq!(drain(&mut rx).await, vec!["abc"]);
    assert_eq!(rx.end.await.expect("end").ending, Ending::Complete);
}

#[tokio::test]
async fn a_body_over_before_its_first_poll_is_complete_not_dropped() {
    let (tap, mut rx) = tap(1);
    let mut empty = Scripted::data(&[]);
    empty.knows_its_end = true;
    let body = TeeBody::new(empty, tap);
    drop(body); // never polled, as hyper does with a Content-Length: 0 body
    assert!(drain(&mut rx).await.is_empty());
    assert_eq!(rx.end.await.expect("end").ending, Ending::Complete);
}

#[tokio::test]
async fn a_tap_is_bounded_by_bytes_as_well_as_frames() {
    // Room for 64 frames but only 10 bytes: the third 4-byte frame would make 12.
    let (tap, mut rx) = tap_bounded(64, 10);
    let chunks = ["aaaa", "bbbb", "cccc", "dddd"];
    let mut body = TeeBody::new(Scripted::data(&chunks), tap);
    let mut forwarded = Vec::new();
    while let Some(frame) = body.frame().await {
        forwarded.push(frame.expect("frame").into_data().expect("data"));
    }
    assert_eq!(forwarded, chunks, "the client gets every frame, unchanged");
    assert_eq!(drain(&mut rx).await, vec!["aaaa", "bbbb"]);
    let end = rx.end.await.expect("end delivered");
    assert!(end.lossy);
    assert_eq!(end.dropped_frames, 2);
}

#[tokio::test]
async fn bytes_read_by_the_inspector_make_room_again_and_a_big_frame_fits_an_empty_tap() {
    let (tap, mut rx) = tap_bounded(64, 10);
    let mut body = TeeBody::new(Scripted::data(&["aaaaaaaaaaaaaaaa", "bbbbbbbb", "cc"]), tap);
    let first = body.frame().await.expect("frame").expect("ok");
    assert_eq!(
        first.into_data().expect("data").len(),
        16,
        "larger than the bound, tap empty"
    );
    assert_eq!(rx.data.recv().await.expect("copied").bytes.len(), 16);
    body.frame().await.expect("frame").expect("ok");
    let kept = rx.data.try_recv_kept().expect("copied");
    assert_eq!(kept.bytes, "bbbbbbbb");
    rx.data.release(kept.bytes.len());
    body.frame().await.expect("frame").expect("ok");
    assert!(body.frame().await.is_none());
    drop(body);
    assert_eq!(drain(&mut rx).await, vec!["cc"]);
    let end = rx.end.await.expect("end delivered");
    assert!(
        !end.lossy,
        "each frame found room once the one before was read"
    );
}

#[tokio::test]
async fn a_kept_frame_counts_against_the_bound_until_it_is_released() {
    let (tap, mut rx) = tap_bounded(64, 10);
    let mut body = TeeBody::new(Scripted::data(&["aaaaaa", "bbbbbb", "cccc"]), tap);
    body.frame().await.expect("frame").expect("ok");
    let kept = rx.data.recv_kept().await.expect("copied");
    // 6 bytes kept (read, not released) + 6 more > 10: a hole, though the channel is empty.
    body.frame().await.expect("frame").expect("ok");
    body.frame().await.expect("frame").expect("ok");
    rx.data.release(kept.bytes.len());
    assert!(body.frame().await.is_none());
    drop(body);
    assert!(
        drain(&mut rx).await.is_empty(),
        "nothing was copied after the hole"
    );
    let end = rx.end.await.expect("end delivered");
    assert!(end.lossy);
    assert_eq!(end.dropped_frames, 2);
}

#[tokio::test]
async fn the_tap_copies_frames_so_it_never_pins_the_buffer_they_were_cut_from() {
    let (tap, mut rx) = tap_bounded(64, 1 << 20);
    let read_buffer = Bytes::from(vec![b'x'; 16 * 1024]);
    let frames: Vec<Bytes> = (0..4)
        .map(|i| read_buffer.slice(i * 100..i * 100 + 100))
        .collect();
    let mut body = TeeBody::new(Scripted::frames(frames.clone()), tap);
    while let Some(frame) = body.frame().await {
        frame.expect("ok");
    }
    drop(body);
    let range = read_buffer.as_ptr_range();
    let mut copies = 0;
    while let Some(event) = rx.data.recv().await {
        assert_eq!(
            event.bytes, frames[copies],
            "the copy has the frame's bytes"
        );
        assert!(
            !range.contains(&event.bytes.as_ptr()),
            "a copy, not a slice of the read buffer"
        );
        copies += 1;
    }
    assert_eq!(copies, 4);
}

#[test]
fn copy_blocks_start_small_and_double_up_to_their_bound() {
    let mut block = BytesMut::new();
    let mut next = FIRST_COPY_BLOCK;
    let first = copy_into(&mut block, &mut next, &[b'a'; 100]);
    assert_eq!(first, vec![b'a'; 100]);
    assert!(
        block.capacity() < FIRST_COPY_BLOCK,
        "one slow event keeps a small block: {} left",
        block.capacity()
    );
    let mut sizes = vec![next];
    for _ in 0..8 {
        let _kept = copy_into(&mut block, &mut next, &[b'b'; 600]);
        sizes.push(next);
    }
    assert_eq!(*sizes.last().expect("sizes"), COPY_BLOCK, "{sizes:?}");
    assert!(sizes.windows(2).all(|w| w[1] >= w[0]), "{sizes:?}");
}

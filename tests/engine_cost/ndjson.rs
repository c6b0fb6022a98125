//! The NDJSON framer's cost property: framing n and 4n lines, and one line n and 4n times as
//! long fed in 7-byte pushes, grows about linearly (each byte is looked at once: a pending
//! line is appended to, never rescanned). Measured as the other shapes are: the thread's CPU
//! time, best of three, against [`super::CPU_GROWTH`].

use tooltap::engine::framing::{NdjsonEnd, NdjsonFramer};

use super::framing_grows_linearly;

/// One run of framing `body` in `chunk`-byte pushes.
fn frame(body: &[u8], chunk: usize) {
    let mut framer = NdjsonFramer::new(usize::MAX);
    let mut lines = Vec::new();
    for piece in body.chunks(chunk) {
        framer.push(piece, &mut lines).expect("unbounded");
        lines.clear();
    }
    assert_eq!(framer.finish(&mut lines), NdjsonEnd::Complete);
}

fn many_lines(n: usize) -> Vec<u8> {
    let one = r#"{"model":"qwen3","message":{"role":"assistant","content":"","tool_calls":[{"function":{"index":0,"name":"f","arguments":{"q":"a\nb"}}}]},"done":false}"#;
    let mut body = Vec::new();
    for _ in 0..n {
        body.extend_from_slice(one.as_bytes());
        body.extend_from_slice(b"\r\n");
    }
    body
}

fn one_huge_line(n: usize) -> Vec<u8> {
    let mut body = br#"{"message":{"content":""#.to_vec();
    for _ in 0..n {
        body.extend_from_slice(br#"x\"]} "#);
    }
    body.extend_from_slice(b"\"}}\n");
    body
}

#[test]
fn framing_work_grows_linearly_with_lines_and_with_one_huge_line() {
    framing_grows_linearly(
        &[
            ("many lines", many_lines, 20_000),
            ("one huge line", one_huge_line, 80_000),
        ],
        frame,
    );
}

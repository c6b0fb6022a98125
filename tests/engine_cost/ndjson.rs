//! The NDJSON framer's cost property: framing n and 4n lines, and one line n and 4n times as
//! long fed in 7-byte pushes, grows about linearly (each byte is looked at once: a pending
//! line is appended to, never rescanned). Measured as the other shapes are: the thread's CPU
//! time, best of three, against [`super::CPU_GROWTH`].

use std::time::Duration;

use tooltap::engine::framing::{NdjsonEnd, NdjsonFramer};

use super::{CPU_GROWTH, CPU_TICK, thread_cpu, verbose};

/// The least CPU time of three runs of framing `body` in `chunk`-byte pushes.
fn cost(body: &[u8], chunk: usize) -> Duration {
    (0..3)
        .map(|_| {
            let before = thread_cpu();
            let mut framer = NdjsonFramer::new(usize::MAX);
            let mut lines = Vec::new();
            for piece in body.chunks(chunk) {
                framer.push(piece, &mut lines).expect("unbounded");
                lines.clear();
            }
            assert_eq!(framer.finish(&mut lines), NdjsonEnd::Complete);
            thread_cpu() - before
        })
        .min()
        .unwrap_or_default()
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
    type MakeBody = fn(usize) -> Vec<u8>;
    let shapes: [(&str, MakeBody, usize); 2] = [
        ("many lines", many_lines, 20_000),
        ("one huge line", one_huge_line, 80_000),
    ];
    for (name, make, n) in shapes {
        let (small_body, large_body) = (make(n), make(4 * n));
        let small = cost(&small_body, 7);
        let large = cost(&large_body, 7);
        let growth = large.as_secs_f64() / small.max(CPU_TICK).as_secs_f64();
        if verbose() {
            eprintln!(
                "{name}: {} bytes {small:?}, {} bytes {large:?} ({growth:.1}x)",
                small_body.len(),
                large_body.len()
            );
        }
        assert!(
            growth <= CPU_GROWTH,
            "{name}: {small:?} at n={n}, {large:?} at 4n ({growth:.1}x)"
        );
    }
}

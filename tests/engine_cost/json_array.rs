//! The JSON-array framer's cost property: framing n and 4n elements, and one element n and 4n
//! times as large fed in 7-byte pushes, grows about linearly (the scanner's state lives across
//! pushes; a rescan of the pending element on every push is quadratic). Measured as the other
//! shapes are: the thread's CPU time, best of three, against [`super::CPU_GROWTH`].

use std::time::Duration;

use tooltap::engine::framing::JsonArrayFramer;

use super::{CPU_GROWTH, CPU_TICK, thread_cpu, verbose};

/// The least CPU time of three runs of framing `body` in `chunk`-byte pushes.
fn cost(body: &[u8], chunk: usize) -> Duration {
    (0..3)
        .map(|_| {
            let before = thread_cpu();
            let mut framer = JsonArrayFramer::new(usize::MAX);
            let mut elements = Vec::new();
            for piece in body.chunks(chunk) {
                framer.push(piece, &mut elements).expect("unbounded");
                elements.clear();
            }
            assert!(framer.is_closed());
            thread_cpu() - before
        })
        .min()
        .unwrap_or_default()
}

fn many_elements(n: usize) -> Vec<u8> {
    let one = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"q":"a \"]}"}}}]}}]}"#;
    let mut body = b"[".to_vec();
    for i in 0..n {
        if i > 0 {
            body.extend_from_slice(b"\r\n,\r\n");
        }
        body.extend_from_slice(one.as_bytes());
    }
    body.extend_from_slice(b"\r\n]");
    body
}

fn one_huge_element(n: usize) -> Vec<u8> {
    let mut body = b"[{\"t\":[".to_vec();
    for i in 0..n {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(br#"{"s":"x\"]}"}"#);
    }
    body.extend_from_slice(b"]}]");
    body
}

#[test]
fn framing_work_grows_linearly_with_elements_and_with_one_huge_element() {
    type MakeBody = fn(usize) -> Vec<u8>;
    let shapes: [(&str, MakeBody, usize); 2] = [
        ("many elements", many_elements, 20_000),
        ("one huge element", one_huge_element, 40_000),
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

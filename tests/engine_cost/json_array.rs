//! The JSON-array framer's cost property: framing n and 4n elements, and one element n and 4n
//! times as large fed in 7-byte pushes, grows about linearly (the scanner's state lives across
//! pushes; a rescan of the pending element on every push is quadratic). Measured as the other
//! shapes are: the thread's CPU time, best of three, against [`super::CPU_GROWTH`].

use tooltap::engine::framing::JsonArrayFramer;

use super::framing_grows_linearly;

/// One run of framing `body` in `chunk`-byte pushes.
fn frame(body: &[u8], chunk: usize) {
    let mut framer = JsonArrayFramer::new(usize::MAX);
    let mut elements = Vec::new();
    for piece in body.chunks(chunk) {
        framer.push(piece, &mut elements).expect("unbounded");
        elements.clear();
    }
    assert!(framer.is_closed());
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
    framing_grows_linearly(
        &[
            ("many elements", many_elements, 20_000),
            ("one huge element", one_huge_element, 40_000),
        ],
        frame,
    );
}

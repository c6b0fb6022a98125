//! Enforce mode on a streamed JSON array (Gemini's `streamGenerateContent` without `alt=sse`):
//! whole elements only reach the client, so a refused stream can still end as a valid array.
//!
//! Input: the upstream's body frames, in arbitrary splits. Output: for each frame, the bytes up
//! to the end of the last element it completes (what came before the first element, `[` and
//! whitespace, goes with that element); the rest of the element is held until a later frame
//! completes it. The element that completes a violation is not forwarded, nor anything after it:
//! the array is closed with the dialect's error body as its last element, `,{"error":...}]`
//! after the elements already forwarded or `[{"error":...}]` when none was, which the
//! google-genai SDKs raise. This is finer than an SSE stream's cut (there the whole frame that
//! completed the violation is replaced): elements before the violating one in the same frame
//! are forwarded.
//!
//! The held element is bounded by the engine's element bound (`inspect.max_sse_line`, which the
//! engine's array framer stops at too): past it, what is held is forwarded and the rest of the
//! stream passes unenforced, like a buffered body over its bound.

use bytes::{Bytes, BytesMut};

/// Where the element scan is: depth 0 before `[`, 1 inside the array between elements, 2 and
/// more inside an element. Only strings and brackets are followed; the element's own syntax is
/// the engine's to judge.
#[derive(Debug, Default)]
struct ElementEnds {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl ElementEnds {
    /// Appends to `ends` the offset just past each element (an object, array or string) that
    /// closes in `bytes`.
    fn scan(&mut self, bytes: &[u8], ends: &mut Vec<usize>) {
        for (at, &byte) in bytes.iter().enumerate() {
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => {
                        self.in_string = false;
                        if self.depth == 1 {
                            ends.push(at + 1);
                        }
                    }
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' if self.depth >= 1 => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' if self.depth > 0 => {
                    self.depth -= 1;
                    if self.depth == 1 {
                        ends.push(at + 1);
                    }
                }
                _ => {}
            }
        }
    }
}

/// What one frame gave: bytes to forward now, or the cut.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Forward these bytes (possibly none: the frame only added to the held element).
    Forward(Bytes),
    /// A violation: forward `before` (whole elements that passed), then close the array.
    Cut { before: Bytes },
    /// The held element outgrew its bound: forward these bytes and stop enforcing.
    GiveUp(Bytes),
}

/// The JSON-array side of an [`super::EnforceBody`].
#[derive(Debug)]
pub(super) struct ArrayHold {
    ends: ElementEnds,
    held: BytesMut,
    /// Body bytes forwarded to the client so far (whole elements, and what preceded them).
    forwarded: u64,
    limit: usize,
    scratch: Vec<usize>,
}

impl ArrayHold {
    pub(super) fn new(limit: usize) -> ArrayHold {
        ArrayHold {
            ends: ElementEnds::default(),
            held: BytesMut::new(),
            forwarded: 0,
            limit,
            scratch: Vec::new(),
        }
    }

    /// Body bytes the client got before a cut.
    pub(super) fn forwarded(&self) -> u64 {
        self.forwarded
    }

    /// One upstream frame: `judge` is fed each piece that ends an element (then the rest) and
    /// answers whether a violation is now known.
    pub(super) fn frame(&mut self, bytes: &Bytes, mut judge: impl FnMut(&[u8]) -> bool) -> Step {
        let mut ends = std::mem::take(&mut self.scratch);
        ends.clear();
        self.ends.scan(bytes, &mut ends);
        let mut out = BytesMut::new();
        let mut from = 0;
        for &end in &ends {
            if judge(&bytes[from..end]) {
                self.scratch = ends;
                return Step::Cut {
                    before: out.freeze(),
                };
            }
            out.extend_from_slice(&self.held.split());
            out.extend_from_slice(&bytes[from..end]);
            from = end;
        }
        self.scratch = ends;
        let rest = &bytes[from..];
        if !rest.is_empty() && judge(rest) {
            return Step::Cut {
                before: out.freeze(),
            };
        }
        self.held.extend_from_slice(rest);
        if self.held.len() > self.limit {
            out.extend_from_slice(&self.held.split());
            self.forwarded += out.len() as u64;
            return Step::GiveUp(out.freeze());
        }
        self.forwarded += out.len() as u64;
        Step::Forward(out.freeze())
    }

    /// Whether an element was forwarded: the array is then open and ends in an element.
    fn opened(&self) -> bool {
        self.forwarded > 0
    }

    /// What closes the array after a cut with `before` forwarded in the cutting frame:
    /// `,<error>]` after an element, `[<error>]` when none was forwarded.
    pub(super) fn close(&mut self, before: &Bytes, error: &str) -> Bytes {
        self.forwarded += before.len() as u64;
        let open = if self.opened() { "," } else { "[" };
        Bytes::from(format!("{open}{error}]"))
    }

    /// What is still held at the end of a clean stream (the closing `]`, whitespace).
    pub(super) fn rest(&mut self) -> Bytes {
        self.forwarded += self.held.len() as u64;
        self.held.split().freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"n":"a","s":"x]}\"{"}"#;
    const B: &str = r#"{"n":"b","bad":true}"#;
    const C: &str = r#"{"n":"c"}"#;

    fn body() -> String {
        format!("[{A}\r\n,\r\n{B}\r\n,\r\n{C}\r\n]")
    }

    /// Feeds `body` cut at `splits`, judging an element bad when it holds `"bad"`; what the
    /// client gets.
    fn run(body: &str, splits: &[usize]) -> String {
        let mut hold = ArrayHold::new(1024);
        let mut seen = String::new();
        let mut client = Vec::new();
        let mut at = 0;
        let mut cuts = splits.to_vec();
        cuts.push(body.len());
        for end in cuts {
            let frame = Bytes::copy_from_slice(&body.as_bytes()[at..end]);
            at = end;
            let step = hold.frame(&frame, |piece| {
                seen.push_str(std::str::from_utf8(piece).expect("utf-8"));
                seen.contains(r#""bad""#)
            });
            match step {
                Step::Forward(bytes) => client.extend_from_slice(&bytes),
                Step::Cut { before } => {
                    client.extend_from_slice(&before);
                    client.extend_from_slice(&hold.close(&before, r#"{"error":{}}"#));
                    assert_eq!(hold.forwarded() as usize + 14, client.len());
                    return String::from_utf8(client).expect("utf-8");
                }
                Step::GiveUp(_) => panic!("within the bound"),
            }
        }
        client.extend_from_slice(&hold.rest());
        String::from_utf8(client).expect("utf-8")
    }

    #[test]
    fn a_violating_element_and_what_follows_are_replaced_at_every_split() {
        let body = body();
        let want = format!(r#"[{A},{{"error":{{}}}}]"#);
        for split in 0..=body.len() {
            let got = run(&body, &[split]);
            assert_eq!(got, want, "split at {split}");
            let parsed: serde_json::Value = serde_json::from_str(&got).expect("valid JSON");
            assert_eq!(parsed.as_array().map(Vec::len), Some(2));
        }
        // Byte by byte.
        let every: Vec<usize> = (1..body.len()).collect();
        assert_eq!(run(&body, &every), want);
    }

    #[test]
    fn a_violation_in_the_first_element_gives_an_array_of_the_error_alone() {
        let body = format!("[{B},{C}]");
        for split in 0..=body.len() {
            assert_eq!(
                run(&body, &[split]),
                r#"[{"error":{}}]"#,
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_clean_array_reaches_the_client_whole() {
        let body = format!("[{A}\r\n,\r\n{C}\r\n]\r\n");
        for split in 0..=body.len() {
            assert_eq!(run(&body, &[split]), body, "split at {split}");
        }
    }

    #[test]
    fn an_element_past_the_bound_is_forwarded_and_enforcement_stops() {
        let mut hold = ArrayHold::new(8);
        let step = hold.frame(&Bytes::from_static(b"[{\"n\":\"long"), |_| false);
        assert_eq!(step, Step::GiveUp(Bytes::from_static(b"[{\"n\":\"long")));
    }
}

//! Enforce mode on a streamed JSON array (Gemini's `streamGenerateContent` without `alt=sse`):
//! whole elements only reach the client, so a refused stream can still end as a valid array.
//!
//! Input: the upstream's body bytes. Output: [`ElementEnds`], where each element ends (what came
//! before the first element, `[` and whitespace, goes with that element), for
//! [`super::whole::WholeUnits`], which forwards whole elements and holds the rest; and the
//! array's closing after a cut. The element that completes a violation is not forwarded, nor
//! anything after it: the array is closed with the dialect's error body as its last element,
//! `,{"error":...}]` after the elements already forwarded or `[{"error":...}]` when none was,
//! which the google-genai SDKs raise.

use bytes::Bytes;

use super::whole::WholeUnits;

/// Where the element scan is: depth 0 before `[`, 1 inside the array between elements, 2 and
/// more inside an element. Only strings and brackets are followed; the element's own syntax is
/// the engine's to judge.
#[derive(Debug, Default)]
pub(super) struct ElementEnds {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl ElementEnds {
    /// Appends to `ends` the offset just past each element (an object, array or string) that
    /// closes in `bytes`.
    pub(super) fn scan(&mut self, bytes: &[u8], ends: &mut Vec<usize>) {
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

impl WholeUnits {
    /// What closes the array after a cut: `,<error>]` after an element, `[<error>]` when none
    /// was forwarded.
    pub(super) fn close(&self, error: &str) -> Bytes {
        let open = if self.opened() { "," } else { "[" };
        Bytes::from(format!("{open}{error}]"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::enforce::whole::client::gets;
    use crate::proxy::enforce::whole::{Ends, Step};

    fn hold(limit: usize) -> WholeUnits {
        WholeUnits::new(Ends::Elements(ElementEnds::default()), limit)
    }

    const A: &str = r#"{"n":"a","s":"x]}\"{"}"#;
    const B: &str = r#"{"n":"b","bad":true}"#;
    const C: &str = r#"{"n":"c"}"#;

    fn body() -> String {
        format!("[{A}\r\n,\r\n{B}\r\n,\r\n{C}\r\n]")
    }

    /// Feeds `body` cut at `splits`, judging an element bad when it holds `"bad"`; what the
    /// client gets.
    fn run(body: &str, splits: &[usize]) -> String {
        let bad = |seen: &str| seen.contains(r#""bad""#);
        gets(hold(1024), body, splits, bad, |hold| {
            hold.close(r#"{"error":{}}"#)
        })
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
        let mut hold = hold(8);
        let step = hold.frame(&Bytes::from_static(b"[{\"n\":\"long"), |_| false);
        assert_eq!(step, Step::GiveUp(Bytes::from_static(b"[{\"n\":\"long")));
    }
}

//! A Responses function call's arguments in bounded memory: the
//! `response.function_call_arguments.delta` fragments followed by an [`ArgumentStream`], and
//! every whole copy of the text a stream repeats (the `.done` event's `arguments`,
//! `output_item.done`'s item, the terminal response's `output`) kept as itself while it fits
//! the held bound and past it as a [`marker`]: its first bytes, its length and a digest, so
//! two copies still compare equal exactly when their texts do.
//!
//! Input: the fragments with their seq, the whole copies as they arrive, the tool's schema.
//! Output: the break at the fragment where the text became impossible JSON; the text each
//! consumer gets ([`StreamedArguments::text`], a marker past the bound); and, once the item is
//! judged, what the output rules must use in place of parsing that text ([`Judged`]).

use std::borrow::Cow;

use ring::digest::{Context, SHA256};
use serde_json::Value;

use crate::engine::arguments::{ArgumentLimits, ArgumentStream, ArgumentVerdict};
use crate::engine::json_stream::Broken;
use crate::engine::schema::ToolSchema;

/// What the output rules use for a call's arguments instead of parsing the text they got.
#[derive(Debug, Clone)]
pub enum Judged {
    /// The text was held whole and its break was reported at its fragment: not again.
    BreakReported,
    /// Past the held bound: the verdict, the text's first bytes, and whether its break was
    /// reported at its fragment.
    Verdict {
        verdict: ArgumentVerdict,
        shown: String,
        break_reported: bool,
    },
}

/// A running SHA-256 (ring's context shows nothing of itself in `Debug`).
#[derive(Clone)]
struct Digest(Context);

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Digest(sha256)")
    }
}

/// The streamed argument text of one function call.
#[derive(Debug)]
pub struct StreamedArguments {
    stream: Option<ArgumentStream>,
    /// The text's first bytes, as [`kept`] cuts them from a whole copy (whatever the split).
    prefix: String,
    prefix_bound: usize,
    prefix_full: bool,
    len: u64,
    /// SHA-256 of the text so far: a copy that differs cannot be crafted to match.
    digest: Digest,
    break_reported: bool,
}

impl StreamedArguments {
    pub fn new(schema: Option<&ToolSchema>, limits: ArgumentLimits) -> StreamedArguments {
        StreamedArguments {
            stream: Some(ArgumentStream::new(schema, limits)),
            prefix: String::new(),
            prefix_bound: limits.prefix,
            prefix_full: false,
            len: 0,
            digest: Digest(Context::new(&SHA256)),
            break_reported: false,
        }
    }

    /// Reads one fragment; the break, the first time the text becomes impossible JSON.
    pub fn push(&mut self, fragment: &str, seq: u64) -> Option<Broken> {
        self.len += fragment.len() as u64;
        self.digest.0.update(fragment.as_bytes());
        if !self.prefix_full {
            let room = self.prefix_bound - self.prefix.len();
            let end = fragment.floor_char_boundary(room);
            self.prefix.push_str(&fragment[..end]);
            self.prefix_full = end < fragment.len();
        }
        self.stream.as_mut()?.push(fragment, seq)
    }

    /// Notes that the break [`StreamedArguments::push`] returned was reported.
    pub fn break_reported(&mut self) {
        self.break_reported = true;
    }

    /// Heap bytes held.
    pub fn held_bytes(&self) -> usize {
        self.stream.as_ref().map_or(0, ArgumentStream::held_bytes)
    }

    /// The held text (or its first bytes) and whether it is whole.
    pub fn held(&self) -> (&str, bool) {
        self.stream
            .as_ref()
            .map_or(("", true), ArgumentStream::text)
    }

    /// The text as consumers get it: whole while held, else its [`marker`].
    pub fn text(&self) -> Cow<'_, str> {
        match self.held() {
            (text, true) => Cow::Borrowed(text),
            (_, false) => Cow::Owned(marker(&self.prefix, self.len, self.digest.0.clone())),
        }
    }

    /// Whether `text` (a kept copy: whole, or a marker) is the streamed text.
    pub fn is(&self, kept: &str) -> bool {
        self.text() == kept
    }

    /// What the output rules use for this text: `None` when it was held whole and unbroken
    /// (they parse it as a buffered body's).
    pub fn judge(&mut self, schema: Option<&ToolSchema>) -> Option<Judged> {
        let stream = self.stream.take()?;
        let (text, whole) = stream.text();
        if whole {
            return self.break_reported.then_some(Judged::BreakReported);
        }
        let shown = text.to_owned();
        Some(Judged::Verdict {
            verdict: stream.finish(schema),
            shown,
            break_reported: self.break_reported,
        })
    }
}

/// A whole copy of a text as it is kept: itself within the held bound, else its marker.
pub fn kept(text: &str, limits: ArgumentLimits) -> Cow<'_, str> {
    if text.len() <= limits.text {
        return Cow::Borrowed(text);
    }
    let mut digest = Context::new(&SHA256);
    digest.update(text.as_bytes());
    let prefix = &text[..text.floor_char_boundary(limits.prefix)];
    Cow::Owned(marker(prefix, text.len() as u64, digest))
}

/// The start of `text` a violation's preview shows (a preview is shorter), without copying
/// the rest.
pub fn start_of(text: &str) -> &str {
    &text[..text.floor_char_boundary(256)]
}

/// A whole copy of a text past the held bound judged as it is read (the arguments of an item
/// given whole rather than streamed).
pub fn judge_given(text: &str, schema: Option<&ToolSchema>, limits: ArgumentLimits) -> Judged {
    let mut stream = ArgumentStream::new(schema, limits);
    stream.push(text, 0);
    let shown = stream.text().0.to_owned();
    let verdict = match stream.finish(schema) {
        // Not streamed: no fragment to name.
        ArgumentVerdict::NotJson { broken, .. } => ArgumentVerdict::NotJson { broken, seq: None },
        other => other,
    };
    Judged::Verdict {
        verdict,
        shown,
        break_reported: false,
    }
}

/// Replaces `item[key]`, a string past the held bound, by its marker; returns the text's
/// verdict when `judge` asks for it (a function call's arguments).
pub fn shrink_member(
    item: &mut Value,
    key: &str,
    limits: ArgumentLimits,
    judge: Option<Option<&ToolSchema>>,
) -> Option<Judged> {
    let text = item.get(key)?.as_str()?;
    if text.len() <= limits.text {
        return None;
    }
    let judged = judge.map(|schema| judge_given(text, schema, limits));
    let marker = kept(text, limits).into_owned();
    if let Some(object) = item.as_object_mut() {
        object.insert(key.to_owned(), Value::String(marker));
    }
    judged
}

/// What stands for a text past the held bound: its first bytes, its length and its digest.
fn marker(prefix: &str, len: u64, digest: Context) -> String {
    let digest: String = digest.finish().as_ref()[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("{prefix}… [{len} bytes, sha256 {digest}: past the held bound, not kept]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_text_and_a_whole_copy_compare_by_marker_past_the_bound() {
        let limits = ArgumentLimits {
            text: 64,
            value: 16,
            prefix: 8,
        };
        let text = format!("{{\"content\":\"{}\"}}", "é".repeat(100));
        for piece in [1, 7, 64, 1000] {
            let mut streamed = StreamedArguments::new(None, limits);
            let mut at = 0;
            while at < text.len() {
                let mut end = (at + piece).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                assert_eq!(streamed.push(&text[at..end], 1), None);
                at = end;
            }
            assert!(streamed.is(&kept(&text, limits)), "split {piece}");
            let other = text.replacen('é', "e", 1);
            assert!(!streamed.is(&kept(&other, limits)));
            assert!(streamed.text().len() < 200);
        }
        let short = "{\"a\":1}";
        let mut streamed = StreamedArguments::new(None, limits);
        streamed.push(short, 1);
        assert!(streamed.is(short));
        assert_eq!(kept(short, limits), short);
    }
}

//! A rule function's view of the sink: where it is judging, so a finding is one call.
//!
//! A [`Judge`] holds the [`ViolationSink`], the [`Stage`] and the site pieces every finding of
//! one place shares (the pointer prefix, the choice, the tool call, the frame); a rule says only
//! what differs: `judge.flag(rule, "/name", detail)`. [`Judge::under`] narrows the place for a
//! nested document (a candidate, a part, a batch element) and gives the sink back when it ends.
//!
//! A place's pointer prefix is written out only when it grows: a nested judge at `""` (as the
//! stream rules take one per event) borrows its parent's prefix, and one a piece deeper writes
//! the piece after a copy of it, with no formatting pass over the prefix. Pieces of a fixed
//! text and an array position ([`Judge::under_at`], [`Judge::at_position`]) are not written at
//! all until a finding needs its path: a clean document's judges, a few levels deep, copy and
//! format nothing (up to [`PIECES`] of them; a deeper one writes them out).

use std::borrow::Cow;
use std::fmt::{self, Display, Write};

use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

/// The sink, the stage and the site pieces shared by the findings of one place.
#[derive(Debug)]
pub struct Judge<'s> {
    sink: &'s mut ViolationSink,
    stage: Stage,
    base: Cow<'s, str>,
    /// The place's pointer after `base`, not written out yet.
    pieces: Pieces,
    choice: Option<u32>,
    tool_call: Option<u32>,
    seq: Option<u64>,
}

/// How many deferred pieces a place holds before it writes them into its prefix.
const PIECES: usize = 4;

/// A pointer piece kept as its parts: a fixed text, then an array position unless it is
/// [`NO_POSITION`].
#[derive(Debug, Clone, Copy)]
struct Piece {
    text: &'static str,
    position: usize,
}

/// A [`Piece`]'s position when it has none (no array holds that many items).
const NO_POSITION: usize = usize::MAX;

/// The deferred pieces of a place's pointer: the first `len` of `held`, in order (written as
/// one text by `Display`).
#[derive(Debug, Clone, Copy)]
struct Pieces {
    held: [Piece; PIECES],
    len: usize,
}

impl Default for Pieces {
    fn default() -> Self {
        Pieces {
            held: [Piece {
                text: "",
                position: NO_POSITION,
            }; PIECES],
            len: 0,
        }
    }
}

impl Pieces {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `piece` after these, or `None` when they are full.
    fn with(mut self, piece: Piece) -> Option<Pieces> {
        *self.held.get_mut(self.len)? = piece;
        self.len += 1;
        Some(self)
    }
}

impl Display for Pieces {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        for piece in self.held.iter().take(self.len) {
            out.write_str(piece.text)?;
            if piece.position != NO_POSITION {
                write!(out, "{}", piece.position)?;
            }
        }
        Ok(())
    }
}

impl<'s> Judge<'s> {
    /// Judges at the root of the document `stage` reads, with no choice, call or frame.
    pub fn new(sink: &'s mut ViolationSink, stage: Stage) -> Judge<'s> {
        Judge {
            sink,
            stage,
            base: Cow::Borrowed(""),
            pieces: Pieces::default(),
            choice: None,
            tool_call: None,
            seq: None,
        }
    }

    /// The same place in another choice.
    pub fn choice(mut self, choice: Option<u32>) -> Judge<'s> {
        self.choice = choice;
        self
    }

    /// The same place in another tool call.
    pub fn tool_call(mut self, tool_call: Option<u32>) -> Judge<'s> {
        self.tool_call = tool_call;
        self
    }

    /// The same place, completed by another frame.
    pub fn seq(mut self, seq: Option<u64>) -> Judge<'s> {
        self.seq = seq;
        self
    }

    /// The same place, read by another stage.
    pub fn stage(mut self, stage: Stage) -> Judge<'s> {
        self.stage = stage;
        self
    }

    /// The same judge, moved to the document at `pointer` below this place.
    pub fn at(mut self, pointer: impl Display) -> Judge<'s> {
        self.write_pieces();
        extend(&mut self.base, pointer);
        self
    }

    /// As [`Judge::at`], at `text` then `position` (`"/choices/"`, 2), written out only for a
    /// finding.
    pub fn at_position(mut self, text: &'static str, position: usize) -> Judge<'s> {
        self.defer(Piece { text, position });
        self
    }

    /// Writes the deferred pieces into the prefix.
    fn write_pieces(&mut self) {
        if !self.pieces.is_empty() {
            let pieces = std::mem::take(&mut self.pieces);
            extend(&mut self.base, pieces);
        }
    }

    /// Adds `piece` to the deferred ones (writing them out first when they are full).
    fn defer(&mut self, piece: Piece) {
        self.pieces = match self.pieces.with(piece) {
            Some(pieces) => pieces,
            None => {
                self.write_pieces();
                Pieces::default().with(piece).unwrap_or_default()
            }
        };
    }

    /// A judge for the document at `pointer` below this place (same stage, choice, call and
    /// frame), borrowing the sink until it is dropped.
    pub fn under(&mut self, pointer: impl Display) -> Judge<'_> {
        self.write_pieces();
        let mut base = Cow::Borrowed(&*self.base);
        extend(&mut base, pointer);
        Judge {
            base,
            pieces: Pieces::default(),
            sink: self.sink,
            stage: self.stage,
            choice: self.choice,
            tool_call: self.tool_call,
            seq: self.seq,
        }
    }

    /// As [`Judge::under`], at the fixed `text` (`"/message/tool_calls"`), written out only
    /// for a finding.
    pub fn under_text(&mut self, text: &'static str) -> Judge<'_> {
        self.under_piece(Piece {
            text,
            position: NO_POSITION,
        })
    }

    /// As [`Judge::under`], at `text` then `position` (`"/message/tool_calls/"`, 3), written
    /// out only for a finding.
    pub fn under_at(&mut self, text: &'static str, position: usize) -> Judge<'_> {
        self.under_piece(Piece { text, position })
    }

    fn under_piece(&mut self, piece: Piece) -> Judge<'_> {
        let mut nested = Judge {
            base: Cow::Borrowed(&*self.base),
            pieces: self.pieces,
            sink: self.sink,
            stage: self.stage,
            choice: self.choice,
            tool_call: self.tool_call,
            seq: self.seq,
        };
        nested.defer(piece);
        nested
    }

    /// The frame that completed this place, if any.
    pub fn frame(&self) -> Option<u64> {
        self.seq
    }

    /// The site of `pointer` below this place.
    pub fn site(&self, pointer: impl Display) -> Site {
        let place = Place(&self.base, self.pieces);
        site_below(place, pointer, self.choice, self.tool_call, self.seq)
    }

    /// Records `rule` broken at `pointer` below this place.
    pub fn flag(&mut self, rule: RuleId, pointer: impl Display, detail: impl Into<String>) {
        let site = self.site(pointer);
        self.sink.push(rule, self.stage, site, detail);
    }

    /// As [`Judge::flag`], at warning severity at most: a rule whose severity depends on the
    /// input (a catalogue severity of "E / W").
    pub fn warn(&mut self, rule: RuleId, pointer: impl Display, detail: impl Into<String>) {
        let site = self.site(pointer);
        self.sink.push_lenient(rule, self.stage, site, detail);
    }

    /// [`Judge::flag`] when `strict`, [`Judge::warn`] otherwise.
    pub fn flag_or_warn(
        &mut self,
        strict: bool,
        rule: RuleId,
        pointer: impl Display,
        detail: impl Into<String>,
    ) {
        match strict {
            true => self.flag(rule, pointer, detail),
            false => self.warn(rule, pointer, detail),
        }
    }

    /// Records `rule` broken at a site built by hand (one with a schema path, say), at this
    /// judge's stage; lenient as [`Judge::warn`] unless `strict`.
    pub fn flag_site(&mut self, strict: bool, rule: RuleId, site: Site, detail: impl Into<String>) {
        match strict {
            true => self.sink.push(rule, self.stage, site, detail),
            false => self.sink.push_lenient(rule, self.stage, site, detail),
        }
    }

    /// The sink, for what is not a finding (a budget hit, a count) or for code that takes one.
    pub fn sink(&mut self) -> &mut ViolationSink {
        self.sink
    }

    /// The sink, and a maker of the site of `pointer` below this place: for code that takes
    /// both and writes a site out only for a finding (an argument verdict).
    pub fn sink_and_site<'a>(
        &'a mut self,
        pointer: &'a str,
    ) -> (&'a mut ViolationSink, impl Fn() -> Site + 'a) {
        let Judge {
            sink,
            base,
            pieces,
            choice,
            tool_call,
            seq,
            ..
        } = self;
        let (choice, tool_call, seq, place) = (*choice, *tool_call, *seq, Place(base, *pieces));
        let site = move || site_below(place, pointer, choice, tool_call, seq);
        (&mut **sink, site)
    }
}

/// A place's pointer: its written prefix, then its deferred pieces.
#[derive(Clone, Copy)]
struct Place<'p>(&'p str, Pieces);

impl Display for Place<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        out.write_str(self.0)?;
        self.1.fmt(out)
    }
}

/// Appends `pointer` to `base`, copying a borrowed prefix only once the pointer writes
/// something.
fn extend(base: &mut Cow<'_, str>, pointer: impl Display) {
    /// Writes into the prefix, owning it at the first non-empty piece.
    struct Extend<'b, 'c>(&'b mut Cow<'c, str>);
    impl Write for Extend<'_, '_> {
        fn write_str(&mut self, piece: &str) -> fmt::Result {
            if !piece.is_empty() {
                if let Cow::Borrowed(prefix) = *self.0 {
                    let mut owned = String::with_capacity(prefix.len() + piece.len() + 16);
                    owned.push_str(prefix);
                    *self.0 = Cow::Owned(owned);
                }
                self.0.to_mut().push_str(piece);
            }
            Ok(())
        }
    }
    // Writing into a string cannot fail; a `Display` that errors leaves what it wrote.
    let _ = write!(Extend(base), "{pointer}");
}

/// The site of `pointer` below the document at `base`, in `choice` and `tool_call`, completed
/// by frame `seq`.
fn site_below(
    base: impl Display,
    pointer: impl Display,
    choice: Option<u32>,
    tool_call: Option<u32>,
    seq: Option<u64>,
) -> Site {
    Site {
        choice,
        tool_call,
        path: format!("{base}{pointer}"),
        seq,
        schema_path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::SeverityOverrides;
    use crate::engine::violation::Severity;

    #[test]
    fn a_finding_carries_the_place_and_a_nested_judge_extends_it() {
        let mut sink = ViolationSink::new(SeverityOverrides::default());
        let mut judge = Judge::new(&mut sink, Stage::Fragment).seq(Some(3));
        judge.flag(RuleId::GeminiStreamDoneSentinel, "", "root");
        {
            let mut call = judge
                .under("/candidates/1")
                .choice(Some(1))
                .tool_call(Some(0));
            call.warn(
                RuleId::GeminiResponseFunctionCallUndeclared,
                "/name",
                "nested",
            );
        }
        judge.flag(RuleId::GeminiStreamEventNotJson, "/x", "after");
        let places: Vec<_> = sink
            .as_slice()
            .iter()
            .map(|v| (v.path.as_str(), v.choice, v.tool_call, v.seq, v.stage))
            .collect();
        assert_eq!(
            places,
            [
                ("", None, None, Some(3), Stage::Fragment),
                (
                    "/candidates/1/name",
                    Some(1),
                    Some(0),
                    Some(3),
                    Stage::Fragment
                ),
                ("/x", None, None, Some(3), Stage::Fragment),
            ]
        );
        assert_eq!(sink.as_slice()[1].severity, Severity::Warning);
    }

    #[test]
    fn a_nested_judge_copies_its_prefix_only_when_its_pointer_writes_something() {
        let mut sink = ViolationSink::new(SeverityOverrides::default());
        let mut judge = Judge::new(&mut sink, Stage::Complete).at(format_args!("/choices/{}", 2));
        assert_eq!(judge.base, "/choices/2");
        {
            let same = judge.under("");
            assert!(matches!(same.base, Cow::Borrowed("/choices/2")));
        }
        let mut deeper = judge.under(format_args!("/message/tool_calls/{}", 10));
        assert!(matches!(deeper.base, Cow::Owned(_)));
        deeper.flag(RuleId::ToolCallIdMissing, "/id", "missing");
        let paths: Vec<_> = sink.as_slice().iter().map(|v| v.path.as_str()).collect();
        assert_eq!(paths, ["/choices/2/message/tool_calls/10/id"]);
    }

    #[test]
    fn deferred_pieces_give_the_paths_written_ones_give_and_write_nothing_until_a_finding() {
        // Every finding: once through deferred pieces, once through written ones.
        let paths = |deferred: bool| {
            let mut sink = ViolationSink::new(SeverityOverrides::default());
            let root = Judge::new(&mut sink, Stage::Complete);
            let mut choice = match deferred {
                true => root.at_position("/choices/", 2),
                false => root.at(format_args!("/choices/{}", 2)),
            };
            {
                let mut calls = match deferred {
                    true => choice.under_text("/message/tool_calls"),
                    false => choice.under("/message/tool_calls"),
                };
                if deferred {
                    assert!(matches!(calls.base, Cow::Borrowed("")), "nothing written");
                }
                for position in [0, 13] {
                    let mut call = match deferred {
                        true => calls.under_at("/", position),
                        false => calls.under(format_args!("/{position}")),
                    };
                    call.flag(RuleId::ToolCallIdMissing, "/id", "missing");
                    // Deeper than the pieces a place defers: five more levels.
                    let mut deep = call.under_at("/a/", 1);
                    let mut deeper = deep.under_text("/b");
                    let mut deepest = deeper.under_at("/c/", 3);
                    let mut below = deepest.under("/d");
                    let mut last = below.under_at("/e/", 5);
                    last.warn(RuleId::ToolCallIdMissing, "/f", "deep");
                    let (_, site) = last.sink_and_site("/g");
                    assert_eq!(
                        site().path,
                        format!("/choices/2/message/tool_calls/{position}/a/1/b/c/3/d/e/5/g")
                    );
                }
            }
            choice.flag(RuleId::ToolCallIdMissing, "/x", "after");
            sink.as_slice()
                .iter()
                .map(|v| v.path.clone())
                .collect::<Vec<_>>()
        };
        let deferred = paths(true);
        assert_eq!(deferred, paths(false));
        assert_eq!(
            deferred,
            [
                "/choices/2/message/tool_calls/0/id",
                "/choices/2/message/tool_calls/0/a/1/b/c/3/d/e/5/f",
                "/choices/2/message/tool_calls/13/id",
                "/choices/2/message/tool_calls/13/a/1/b/c/3/d/e/5/f",
                "/choices/2/x",
            ]
        );
    }
}

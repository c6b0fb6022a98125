//! Recordings: each exchange as a replayable fragment sequence on disk (one JSONL file).
//!
//! [`format`] holds the version-1 line types; [`read`] parses a file back. The writer, redaction
//! and `tooltap check` build on these; `tooltap replay` serves what [`read`] returns.

pub mod format;
pub mod read;

pub use format::{EndLine, FrameData, FrameLine, Line, Meta, Outcome, RecordedBody, VERSION};
pub use read::{ReadError, RecordedFrame, Recording, read_file};

//! Recordings: each exchange as a replayable fragment sequence on disk (one JSONL file, or one
//! of many appended to a segment file: [`RecordLayout`]).
//!
//! [`format`](mod@format) holds the version-1 line types; [`read`] parses a file back, [`served`]
//! says what the client received of it. [`Recorder`] writes them off the client path (one writer
//! thread; see `writer/mod.rs` for the calling order an inspector follows), after
//! [`redact`](crate::redact) removed credentials. `tooltap check` (`crate::check`) re-judges
//! recordings and `tooltap replay` serves them, each reading files of every format through
//! `crate::interop::files`.
//!
//! Wiring it into an async inspector: build one [`Recorder`] at start-up with
//! [`Recorder::spawn`], clone it into the shared inspection state, and per exchange call
//! `begin` → `request_body` → `response_head` → `frame`... → `finish`. None of these block or
//! await; all are cheap (a header redaction, a `Bytes` clone and a channel send per frame).

pub mod cassette;
mod config;
mod disk;
mod end_line;
mod exchange_line;
pub mod format;
mod frame_line;
pub mod layout;
mod prune;
pub mod read;
mod segment;
pub mod served;
pub mod store;
pub mod sweep;
mod writer;

pub use crate::redact::{REDACTED, RedactionConfig, Redactor};
pub use config::{
    RecordLayout, RecordMode, RecorderConfig, UnknownRecordLayout, UnknownRecordMode,
};
pub use disk::FAILURE_TARGET;
pub use format::{
    EndLine, EnforcedLine, FrameData, FrameLine, Line, Meta, Outcome, RecordedBody, VERSION,
};
pub use read::{ReadError, RecordedFrame, Recording, read_file, read_file_bounded};
pub use writer::{QUEUE_FULL_TARGET, Recorder, RecordingEnd, RecordingHandle, RecordingStart};

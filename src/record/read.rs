//! Reading recording files back: the meta line, the frames, and the end line when present, for
//! one recording ([`parse`]) or for every recording of a segment file ([`parse_all`]).
//!
//! A file that lost its end (tooltap crashed, or the disk filled) is still readable up to its
//! last whole line: `end` is then `None`, and a partial last line (no trailing newline, not
//! parseable) is ignored. Anything else that is wrong is an error naming the file and the line:
//! a version this build does not know, a line that is not JSON, frames out of order.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;

use super::format::{EndLine, FrameData, FrameLine, Line, Meta, VERSION};

/// A recording as read from disk.
#[derive(Debug, Clone)]
pub struct Recording {
    pub path: PathBuf,
    pub meta: Meta,
    /// `(seq, t_us, bytes)` in file order.
    pub frames: Vec<RecordedFrame>,
    /// `None` when the file ends before its end line.
    pub end: Option<EndLine>,
}

/// One frame, decoded to its exact bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedFrame {
    pub seq: u64,
    pub t_us: u64,
    pub bytes: Bytes,
}

/// Why a recording could not be read; always names the file, and the line where there is one.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "{path}:1: recording format version {found} is newer than this tooltap reads (version {VERSION}); upgrade tooltap"
    )]
    FutureVersion { path: PathBuf, found: u32 },
    #[error("{path}: larger than {max_bytes} bytes (--max-input-bytes); not read")]
    TooLarge { path: PathBuf, max_bytes: u64 },
}

/// A reading buffer that grew past this is given back after its file.
pub const KEPT_BUFFER: usize = 1024 * 1024;
/// Room a reading buffer starts with: a typical recording is read in one `read`, and the next
/// one sees the end (with less room, the reader probes and grows in many small reads).
const FIRST_BUFFER: usize = 16 * 1024;

/// Read and validate one recording file.
pub fn read_file(path: &Path) -> Result<Recording, ReadError> {
    read_file_bounded(path, u64::MAX, &mut Vec::new())
}

/// [`read_file`] for callers that read many: at most `max_bytes` are read (see
/// [`read_bounded`]) into `buffer`, which is kept for the next file.
pub fn read_file_bounded(
    path: &Path,
    max_bytes: u64,
    buffer: &mut Vec<u8>,
) -> Result<Recording, ReadError> {
    let parsed = read_bounded(path, max_bytes, buffer).and_then(|()| parse(path, buffer));
    if buffer.capacity() > KEPT_BUFFER {
        *buffer = Vec::new();
    }
    parsed
}

/// How many recordings a file holds, by its exchange lines, without parsing them: what a
/// reader that shows only so many counts for the rest. A file that cannot be read, or has no
/// exchange line tooltap wrote, counts as one.
pub fn count_recordings(path: &Path, max_bytes: u64, buffer: &mut Vec<u8>) -> usize {
    if read_bounded(path, max_bytes, buffer).is_err() {
        return 1;
    }
    let starts = std::iter::once(0).chain(memchr::memchr_iter(b'\n', buffer).map(|at| at + 1));
    let count = starts
        .filter(|&at| buffer[at..].starts_with(EXCHANGE_PREFIX))
        .count();
    if buffer.capacity() > KEPT_BUFFER {
        *buffer = Vec::new();
    }
    count.max(1)
}

/// The bytes of `path` (a file, a pipe or a device alike) into `buffer`, at most `max_bytes`:
/// more is [`ReadError::TooLarge`], found one byte past the bound, never by reading to the end
/// (`/dev/zero` has none). No `stat`: open, read, close (`check` over many small recordings
/// spent a third of its time in the kernel, two `statx` per file among it).
pub fn read_bounded(path: &Path, max_bytes: u64, buffer: &mut Vec<u8>) -> Result<(), ReadError> {
    use std::io::Read;
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    buffer.clear();
    buffer.reserve(FIRST_BUFFER);
    let file = std::fs::File::open(path).map_err(io)?;
    file.take(max_bytes.saturating_add(1))
        .read_to_end(buffer)
        .map_err(io)?;
    if buffer.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            max_bytes,
        });
    }
    Ok(())
}

/// Parse a recording's bytes (`path` is used in errors only): exactly one recording, so a
/// second exchange line is an error. A file that may be a segment (many recordings appended, see
/// docs/recording-format.md) is read with [`parse_all`].
pub fn parse(path: &Path, text: &[u8]) -> Result<Recording, ReadError> {
    let mut recordings = Vec::new();
    parse_lines(path, text, Expect::One, &mut |recording| {
        recordings.push(recording)
    });
    recordings.pop().unwrap_or_else(|| Err(empty_file(path)))
}

/// What a file with no exchange line is.
fn empty_file(path: &Path) -> ReadError {
    ReadError::Invalid {
        path: path.to_path_buf(),
        line: 1,
        message: "empty file: no exchange line".into(),
    }
}

/// Every recording in a file, in file order: one for a file per exchange, many for a segment
/// (each starts at its exchange line). A recording that is broken is an error in its place
/// (naming its line) and reading goes on at the next exchange line, so one bad recording does
/// not hide the others; never empty (an empty file is one error).
pub fn parse_all(path: &Path, text: &[u8]) -> Vec<Result<Recording, ReadError>> {
    let mut recordings = Vec::new();
    if !unfinished_segment(path, text) {
        parse_each(path, text, &mut |recording| recordings.push(recording));
    }
    recordings
}

/// [`parse_all`], each recording handed to `take` as soon as it is read, for a file that is
/// not an [`unfinished_segment`] (the caller says it skipped one: a segment that holds no whole
/// line, empty or its first recording cut because tooltap was killed as it began it, holds no
/// recording, rather than an error that refuses the folder).
pub fn parse_each(path: &Path, text: &[u8], take: &mut dyn FnMut(Result<Recording, ReadError>)) {
    let mut any = false;
    parse_lines(path, text, Expect::Many, &mut |recording| {
        any = true;
        take(recording);
    });
    if !any {
        take(Err(empty_file(path)));
    }
}

/// Whether `text`, the bytes of `path`, is a segment file that holds no whole line yet.
pub fn unfinished_segment(path: &Path, text: &[u8]) -> bool {
    let segment = path
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with(SEGMENT_PREFIX));
    segment && memchr::memchr(b'\n', text).is_none()
}

/// How a segment file's name begins (`segment-<first id>.jsonl`).
pub const SEGMENT_PREFIX: &str = "segment-";

/// Whether a file holds one recording or may hold many (a segment).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    One,
    Many,
}

/// The recording being read: its exchange line is behind.
struct Reading {
    meta: Meta,
    frames: Vec<RecordedFrame>,
    end: Option<EndLine>,
}

impl Reading {
    fn done(self, path: &Path) -> Recording {
        Recording {
            path: path.to_path_buf(),
            meta: self.meta,
            frames: self.frames,
            end: self.end,
        }
    }
}

/// The line loop behind [`parse`] and [`parse_all`], handing each recording (or error) to
/// `emit` in file order. With [`Expect::One`] the first error ends the reading (it is then the
/// last one emitted); with [`Expect::Many`] an error is emitted in its place and the lines up
/// to the next exchange line are skipped.
fn parse_lines(
    path: &Path,
    text: &[u8],
    expect: Expect,
    emit: &mut dyn FnMut(Result<Recording, ReadError>),
) {
    let invalid = |line: usize, message: String| ReadError::Invalid {
        path: path.to_path_buf(),
        line,
        message,
    };
    let ends_whole = text.last() == Some(&b'\n');
    // Split as `text.split(|b| *b == b'\n')` would, found with memchr: a byte-at-a-time split
    // is a large share of reading a recording (see docs/benchmarks.md#check-reading).
    let mut raw_lines: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text) {
        raw_lines.push((start, end));
        start = end + 1;
    }
    raw_lines.push((start, text.len()));
    // UTF-8 checked once for the whole file: lines read as text then skip serde_json's check of
    // every string (see docs/benchmarks.md#text-not-bytes).
    // A line split at '\n' of valid UTF-8 is valid UTF-8.
    let whole = std::str::from_utf8(text).ok();
    let count = raw_lines.len();
    let mut reading: Option<Reading> = None;
    // After an error in a segment: skip to the next exchange line.
    let mut skipping = false;
    for (i, (from, to)) in raw_lines.into_iter().enumerate() {
        let raw = &text[from..to];
        let line_text = whole.map(|whole| &whole[from..to]);
        let number = i + 1;
        let is_partial_tail = i + 1 == count && !ends_whole;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if skipping && !raw.starts_with(EXCHANGE_PREFIX) {
            continue;
        }
        skipping = false;
        let parsed = match fast_line(raw, line_text) {
            Some(line) => Ok(line),
            None => general_line(raw),
        };
        let step = match parsed {
            Ok(line) => next_line(path, &mut reading, line, number, expect),
            Err(_) if is_partial_tail && reading.is_some() => break, // cut by a crash: ignore
            Err(error) => Err(match reading {
                None => check_version(path, raw).err(),
                Some(_) => None,
            }
            .unwrap_or_else(|| invalid(number, format!("not a recording line: {error}")))),
        };
        match step {
            Ok(Some(finished)) => emit(Ok(finished.done(path))),
            Ok(None) => {}
            Err(error) => {
                reading = None;
                emit(Err(error));
                if expect == Expect::One {
                    return;
                }
                skipping = true;
            }
        }
    }
    if let Some(last) = reading {
        emit(Ok(last.done(path)));
    }
}

/// How the exchange line of every recording tooltap writes begins.
const EXCHANGE_PREFIX: &[u8] = br#"{"type":"exchange","#;

/// Takes one parsed line into the recording being read; returns the recording it finished when
/// the line starts the next one (a segment).
fn next_line(
    path: &Path,
    reading: &mut Option<Reading>,
    line: Line,
    number: usize,
    expect: Expect,
) -> Result<Option<Reading>, ReadError> {
    let invalid = |message: &str| ReadError::Invalid {
        path: path.to_path_buf(),
        line: number,
        message: message.to_owned(),
    };
    let Some(current) = reading.as_mut() else {
        let Line::Exchange(meta) = line else {
            return Err(invalid("the first line must be the exchange line"));
        };
        if meta.v != VERSION {
            return Err(version_error(path, meta.v));
        }
        *reading = Some(Reading {
            meta: *meta,
            frames: Vec::new(),
            end: None,
        });
        return Ok(None);
    };
    match line {
        Line::Exchange(_) if expect == Expect::One => Err(invalid("a second exchange line")),
        // In a segment, the next recording begins; one without its end line (cut by a crash
        // before tooltap restarted) is read as a file that lost its end is.
        Line::Exchange(meta) => {
            let finished = reading.take();
            next_line(path, reading, Line::Exchange(meta), number, expect)?;
            Ok(finished)
        }
        _ if current.end.is_some() => Err(invalid("a line after the end line")),
        Line::Frame(frame) => {
            let expected = current.frames.len() as u64;
            if frame.seq != expected {
                let message = format!("frame seq {} where {expected} was expected", frame.seq);
                return Err(invalid(&message));
            }
            let bytes = match frame.data {
                FrameData::Text(text) => Some(Bytes::from(text)),
                FrameData::Base64(b64) => BASE64.decode(b64).ok().map(Bytes::from),
            }
            .ok_or_else(|| invalid("frame base64 does not decode"))?;
            current.frames.push(RecordedFrame {
                seq: frame.seq,
                t_us: frame.t_us,
                bytes,
            });
            Ok(None)
        }
        Line::End(end) => {
            current.end = Some(*end);
            Ok(None)
        }
    }
}

/// The lines tooltap writes start with their `type`: read those straight into their own type.
/// `Line` is internally tagged, which makes serde buffer every line into an intermediate tree
/// before it can pick the variant (and `FrameLine`'s flattened data a second time); measured,
/// that was most of `tooltap check`'s reading time. Anything else (another key order, a line
/// that does not parse this way) takes the general path, which also words the errors.
fn fast_line(raw: &[u8], text: Option<&str>) -> Option<Line> {
    if raw.starts_with(br#"{"type":"frame","#) {
        if let Some(frame) = text.and_then(super::frame_line::read) {
            return Some(Line::Frame(frame));
        }
        let frame: FrameRead = from_line(raw, text).ok()?;
        let data = match (frame.text, frame.base64) {
            (Some(text), None) => FrameData::Text(text),
            (None, Some(b64)) => FrameData::Base64(b64),
            _ => return None,
        };
        return Some(Line::Frame(FrameLine {
            seq: frame.seq,
            t_us: frame.t_us,
            data,
        }));
    }
    if raw.starts_with(EXCHANGE_PREFIX) {
        if let Some(meta) = text.and_then(super::exchange_line::read) {
            return Some(Line::Exchange(Box::new(meta)));
        }
        return from_line::<Meta>(raw, text)
            .ok()
            .map(|meta| Line::Exchange(Box::new(meta)));
    }
    if raw.starts_with(br#"{"type":"end","#) {
        if let Some(end) = text.and_then(super::end_line::read) {
            return Some(Line::End(Box::new(end)));
        }
        return from_line::<EndLine>(raw, text)
            .ok()
            .map(|end| Line::End(Box::new(end)));
    }
    None
}

/// A line read from its text when the file is UTF-8 (the same value, without serde_json checking
/// each string again), from its bytes otherwise.
fn from_line<T: serde::de::DeserializeOwned>(
    raw: &[u8],
    text: Option<&str>,
) -> serde_json::Result<T> {
    match text {
        Some(text) => serde_json::from_str(text),
        None => serde_json::from_slice(raw),
    }
}

/// Any line the fast path did not take. `Line`'s internal tag buffers the line into serde's
/// intermediate tree first, which a request body kept as raw JSON text cannot be read from: an
/// exchange line is therefore read from a parsed `Value` straight into its own type.
fn general_line(raw: &[u8]) -> Result<Line, serde_json::Error> {
    let value: serde_json::Value = serde_json::from_slice(raw)?;
    if value.get("type").and_then(serde_json::Value::as_str) == Some("exchange") {
        return serde_json::from_value::<Meta>(value).map(|meta| Line::Exchange(Box::new(meta)));
    }
    serde_json::from_value(value)
}

/// A frame line as written (`text` or `base64`), without the flattened enum.
#[derive(Deserialize)]
struct FrameRead {
    seq: u64,
    t_us: u64,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    base64: Option<String>,
}

/// A first line that does not parse may still be a recording from a newer tooltap: say so.
fn check_version(path: &Path, raw: &[u8]) -> Result<(), ReadError> {
    let value: serde_json::Value = match serde_json::from_slice(raw) {
        Ok(value) => value,
        Err(_) => return Ok(()),
    };
    match value.get("v").and_then(serde_json::Value::as_u64) {
        Some(v) if v != u64::from(VERSION) => Err(version_error(path, v as u32)),
        _ => Ok(()),
    }
}

fn version_error(path: &Path, found: u32) -> ReadError {
    if found > VERSION {
        ReadError::FutureVersion {
            path: path.to_path_buf(),
            found,
        }
    } else {
        ReadError::Invalid {
            path: path.to_path_buf(),
            line: 1,
            message: format!("unknown recording format version {found}"),
        }
    }
}

impl Recording {
    /// The response body: every frame's bytes, concatenated.
    pub fn body(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.frames.iter().map(|f| f.bytes.len()).sum());
        for frame in &self.frames {
            body.extend_from_slice(&frame.bytes);
        }
        body
    }
}

//! What `tooltap check` reads: recording files found under the given paths, and captures made
//! elsewhere (`--request`/`--response`), with the response's type sniffed when not given.
//!
//! Input: paths and flags from [`super::CheckArgs`]. Output: a sorted list of recording files
//! plus messages for paths that do not exist, and a [`Capture`] ready for the engine.
//!
//! Every input is bounded by `--max-input-bytes` (default [`DEFAULT_MAX_INPUT_BYTES`]): a
//! larger recording, or a device or pipe named as one (`/dev/zero` never ends), is reported
//! unreadable with a message saying so instead of being read until memory runs out; a
//! `--request`/`--response` file is read through the same bound, so a pipe still works.

use std::path::{Path, PathBuf};

use super::CheckArgs;
use crate::engine::ResponseHead;
use crate::engine::framing::EVENT_STREAM_TYPE;
use crate::engine::framing::event_stream;
use crate::record::layout::is_recording;

/// Folders deeper than this are not walked (a symlink loop ends here).
const MAX_DEPTH: usize = 32;
/// The default `--max-input-bytes`: a recording holds at most `max_bytes_per_recording`
/// (16 MiB) of body, base64 and JSON framing can double that; 256 MiB leaves ample room.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// Recording files under `paths` (a named file is taken whatever its name; folders give their
/// `*.jsonl` files, never hidden temporary ones, and other tools' fixtures: `*.yaml`, `*.yml`,
/// `*.yaml.gz`, `*.har`, see [`crate::interop`]), sorted, and a message per missing path.
pub fn collect(paths: &[PathBuf], max_bytes: u64) -> (Vec<PathBuf>, Vec<String>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                let mut found = Vec::new();
                walk(path, 0, &mut found, &mut problems);
                // `Path`'s order compares component by component, a few hundred instructions
                // per comparison; the same order, as bytes, is compared once per key.
                found.sort_by_cached_key(|(file, _)| order_key(file));
                for (file, meta) in found {
                    match meta {
                        Some(meta) => admit(file, &meta, max_bytes, &mut files, &mut problems),
                        // A plain file by its directory entry: its size is bounded as it is read.
                        None => files.push(file),
                    }
                }
            }
            Ok(meta) => admit(path.clone(), &meta, max_bytes, &mut files, &mut problems),
            Err(error) => problems.push(format!("{}: {error}", path.display())),
        }
    }
    (files, problems)
}

/// Regular files within the bound are judged; anything else is a problem that says why.
fn admit(
    path: PathBuf,
    meta: &std::fs::Metadata,
    max_bytes: u64,
    files: &mut Vec<PathBuf>,
    problems: &mut Vec<String>,
) {
    if !meta.is_file() {
        problems.push(format!(
            "{}: not a regular file (a device or pipe may never end); recordings are files",
            path.display()
        ));
    } else if meta.len() > max_bytes {
        problems.push(too_large(&path, max_bytes));
    } else {
        files.push(path);
    }
}

fn too_large(path: &Path, max_bytes: u64) -> String {
    let path = path.to_path_buf();
    crate::record::ReadError::TooLarge { path, max_bytes }.to_string()
}

/// Reads at most `max_bytes` (files, pipes and devices alike); more is an error.
pub fn read_bounded(path: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    crate::record::read::read_bounded(path, max_bytes, &mut bytes)
        .map_err(|error| error.to_string())?;
    Ok(bytes)
}

/// A sort key giving `Path`'s own order (component by component) for paths found under one
/// folder: the components' bytes joined by 0, which sorts below every byte a name can hold.
/// (Paths from different roots could differ: `Path` puts a root before any name.)
fn order_key(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut key = Vec::new();
    for component in path.components() {
        if !key.is_empty() {
            key.push(0);
        }
        key.extend_from_slice(component.as_os_str().as_bytes());
    }
    key
}

/// Recording files under `dir`, with the metadata of those reached through a symbolic link. The
/// directory entry's type says what is a folder and what a plain file, so a plain file costs no
/// `stat` (its size is bounded when it is read, [`crate::record::read_file_bounded`]); only a
/// symbolic link is followed to learn what it names.
fn walk(
    dir: &Path,
    depth: usize,
    found: &mut Vec<(PathBuf, Option<std::fs::Metadata>)>,
    problems: &mut Vec<String>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            problems.push(format!("{}: cannot list: {error}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let meta = match entry.file_type() {
            Ok(kind) if kind.is_symlink() => std::fs::metadata(&path),
            Ok(kind) if kind.is_dir() => {
                if depth < MAX_DEPTH {
                    walk(&path, depth + 1, found, problems);
                }
                continue;
            }
            Ok(kind) if kind.is_file() => {
                if is_recording(&path) || crate::interop::is_importable(&path) {
                    found.push((path, None));
                }
                continue;
            }
            // A device, a pipe or a socket: not a recording, whatever its name.
            Ok(_) => continue,
            Err(error) => Err(error),
        };
        match meta {
            Ok(meta) if meta.is_dir() && depth < MAX_DEPTH => {
                walk(&path, depth + 1, found, problems)
            }
            Ok(meta)
                if meta.is_file()
                    && (is_recording(&path) || crate::interop::is_importable(&path)) =>
            {
                found.push((path, Some(meta)))
            }
            _ => {}
        }
    }
}

/// An exchange captured elsewhere, as the engine will see it.
#[derive(Debug, Clone)]
pub struct Capture {
    pub source: String,
    /// Decided by `--dialect`, else by `--path` (Chat Completions without either, or when the
    /// path names no dialect).
    pub dialect: crate::engine::Dialect,
    /// `--path`: the request path (and query) the dialect is started from; a `key=` in it is
    /// never printed.
    pub path: Option<String>,
    pub request: Vec<u8>,
    pub head: ResponseHead,
    /// The body split as a server would send it: one frame per SSE event (or per event-stream
    /// message) when the body is an unencoded stream (so `seq` counts events), else one frame.
    pub frames: Vec<Vec<u8>>,
}

/// Reads a `--request`/`--response` pair.
pub fn capture(args: &CheckArgs, request: &Path, response: &Path) -> Result<Capture, String> {
    let read = |path: &Path| read_bounded(path, args.max_input_bytes);
    let request_body = read(request)?;
    let body = read(response)?;
    let content_encoding = args
        .content_encoding
        .clone()
        .or_else(|| sniff_encoding(&body).map(str::to_owned));
    let content_type = match (&args.content_type, &content_encoding) {
        (Some(given), _) => Some(given.clone()),
        // Compressed bytes say nothing; the engine then follows the request's `stream` flag.
        (None, Some(_)) => None,
        (None, None) => sniff_type(&body).map(str::to_owned),
    };
    let is_sse = content_type.as_deref() == Some("text/event-stream");
    let is_event_stream = content_type.as_deref() == Some(EVENT_STREAM_TYPE);
    let frames = match (content_encoding.is_none(), is_sse, is_event_stream) {
        (true, true, _) => split_events(&body),
        (true, _, true) => split_at(&body, event_stream::message_ends(&body)),
        _ => vec![body],
    };
    Ok(Capture {
        dialect: args.dialect.unwrap_or_else(|| {
            crate::engine::Dialect::for_path(args.path.as_deref().unwrap_or_default())
        }),
        source: response.display().to_string(),
        path: args.path.clone(),
        request: request_body,
        head: ResponseHead {
            status: args.status.unwrap_or(200),
            content_type,
            content_encoding,
            headers: Vec::new(),
        },
        frames,
    })
}

fn sniff_encoding(body: &[u8]) -> Option<&'static str> {
    match body {
        [0x1f, 0x8b, ..] => Some("gzip"),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Some("zstd"),
        _ => None,
    }
}

/// JSON when the first meaningful byte opens a document, SSE when it starts a field or comment,
/// an AWS event stream when it opens with a prelude whose CRC holds.
fn sniff_type(body: &[u8]) -> Option<&'static str> {
    if event_stream::starts_with_prelude(body) {
        return Some(EVENT_STREAM_TYPE);
    }
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let start = body.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &body[start..];
    if rest.starts_with(b"{") || rest.starts_with(b"[") {
        return Some("application/json");
    }
    let sse_starts: [&[u8]; 5] = [b"data:", b"event:", b"id:", b"retry:", b":"];
    sse_starts
        .iter()
        .any(|s| rest.starts_with(s))
        .then_some("text/event-stream")
}

/// Cuts after each blank line (CR, LF or CRLF line ends), keeping every byte.
fn split_events(body: &[u8]) -> Vec<Vec<u8>> {
    split_at(body, event_ends(body))
}

/// Cuts `body` at each of `ends` (ascending, the last one the body's end), keeping every byte.
fn split_at(body: &[u8], ends: Vec<usize>) -> Vec<Vec<u8>> {
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let frame = body[start..end].to_vec();
            start = end;
            frame
        })
        .collect()
}

/// Where each SSE event of `body` ends: after each blank line (CR, LF or CRLF line ends), and
/// at the body's end when bytes follow the last blank line. Empty for an empty body.
pub(crate) fn event_ends(body: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let (mut frame_start, mut line_start, mut i) = (0, 0, 0);
    while i < body.len() {
        if body[i] == b'\n' || body[i] == b'\r' {
            let blank = i == line_start;
            if body[i] == b'\r' && body.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            i += 1;
            line_start = i;
            if blank {
                ends.push(i);
                frame_start = i;
            }
        } else {
            i += 1;
        }
    }
    if frame_start < body.len() {
        ends.push(body.len());
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing_and_event_splitting() {
        assert_eq!(
            sniff_type(b"\xef\xbb\xbf  {\"a\":1}"),
            Some("application/json")
        );
        assert_eq!(
            sniff_type(b": ping\n\ndata: x\n\n"),
            Some("text/event-stream")
        );
        assert_eq!(sniff_type(b"hello"), None);
        assert_eq!(sniff_encoding(&[0x1f, 0x8b, 8]), Some("gzip"));
        let frames = split_events(b"data: a\r\n\r\ndata: b\n\ndata: c");
        assert_eq!(
            frames,
            vec![
                b"data: a\r\n\r\n".to_vec(),
                b"data: b\n\n".to_vec(),
                b"data: c".to_vec()
            ]
        );
    }

    #[test]
    fn the_order_key_sorts_as_paths_do() {
        let names = [
            "rec/a-b/x.jsonl",
            "rec/a/b.jsonl",
            "rec/a.b/c.jsonl",
            "rec/a/bc.jsonl",
            "rec/a/b/c.jsonl",
            "rec/ab.jsonl",
            "rec/a//z.jsonl",
            "rec/./a/a.jsonl",
            "/abs/1.jsonl",
        ];
        let mut by_path: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
        let mut by_key = by_path.clone();
        by_path.sort();
        by_key.sort_by_cached_key(|path| order_key(path));
        assert_eq!(by_key, by_path);
        // A plain byte order would differ: '-' and '.' sort below '/'.
        let mut by_bytes = by_path.clone();
        by_bytes.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
        assert_ne!(by_bytes, by_path);
    }
}

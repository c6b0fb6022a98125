//! `tooltap export --format vcr|har RECORDINGS -o DIR`: recordings as other tools' fixtures.
//!
//! Input: recording files and folders (tooltap's own; cassettes and HAR files are read too), the
//! format and the output folder. Output: for `vcr`, one cassette per test — per
//! `x-tooltap-cassette` header recorded, in pytest-recording's layout,
//! `DIR/<module>/<test>.yaml` (see [`cassette_file`]) — and, for recordings without the
//! header, one per folder of recordings, `DIR/<folder relative to the argument>.yaml` (a file
//! named on the command line gives `DIR/<its name>.yaml`), interactions in the order the
//! exchanges started; for `har`, one file,
//! `DIR/tooltap.har`, with every exchange. A message per file that could not be read on
//! `stderr`; exit code 0, or 2 when any input was unreadable (the rest is still written).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Format;
use super::files::{self, DEFAULT_MAX_INPUT_BYTES, FileRead, each_recording};
use crate::record::Recording;
use crate::record::cassette;
use crate::record::format::Meta;
use crate::redact::{REDACTED, Redactor};

/// Flags of `tooltap export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Recording files or folders (folders are walked for `*.jsonl`, cassettes and HAR files),
    /// or `s3://bucket/prefix`.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// `vcr`: vcrpy cassettes (YAML), one per test (x-tooltap-cassette header), else one per
    /// folder of recordings. `har`: one HAR 1.2 file.
    #[arg(long, value_enum)]
    pub format: Format,
    /// The folder written into (created when missing; files of the same name are replaced).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Inputs larger than this are not read (a message says so).
    #[arg(long, default_value_t = DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
}

/// Exit code: everything was written.
pub const EXIT_OK: u8 = 0;
/// Exit code: an input could not be read or an output not written (the rest was written).
pub const EXIT_PROBLEM: u8 = 2;

/// Runs the export; what it wrote and any problem go to `stderr`.
pub fn run(args: &ExportArgs, stderr: &mut dyn Write) -> u8 {
    let mut problems = Vec::new();
    // Group name (a relative path without extension) → recordings.
    let mut groups: BTreeMap<PathBuf, Vec<Recording>> = BTreeMap::new();
    let mut buffer = Vec::new();
    for root in &args.paths {
        let (files, missing) = files::collect(std::slice::from_ref(root), args.max_input_bytes);
        problems.extend(missing);
        for file in files {
            let folder = group_of(root, &file);
            let read =
                each_recording(
                    &file,
                    args.max_input_bytes,
                    &mut buffer,
                    |recording| match recording {
                        Ok(recording) => {
                            // A test's recordings make its own cassette, wherever they were filed.
                            let group = cassette::of_recorded(&recording.meta.request.headers)
                                .map_or_else(|| folder.clone(), |name| cassette_file(&name));
                            groups.entry(group).or_default().push(recording);
                        }
                        Err(error) => problems.push(error.to_string()),
                    },
                );
            if read == FileRead::UnfinishedSegment {
                problems.extend(read.note(&file));
            }
        }
    }
    let redactor = Redactor::default();
    let written = match args.format {
        Format::Vcr => write_cassettes(&args.out, &mut groups, &redactor),
        Format::Har => write_har(&args.out, &mut groups, &redactor),
    };
    let code = match written {
        Ok((files, exchanges)) => {
            let _ = writeln!(
                stderr,
                "tooltap export: {exchanges} exchange(s) into {files} {} under {}",
                match args.format {
                    Format::Vcr => "cassette(s)",
                    Format::Har => "HAR file(s)",
                },
                args.out.display()
            );
            EXIT_OK
        }
        Err(error) => {
            problems.push(error);
            EXIT_PROBLEM
        }
    };
    for problem in &problems {
        let _ = writeln!(stderr, "tooltap export: {problem}");
    }
    if problems.is_empty() {
        code
    } else {
        EXIT_PROBLEM
    }
}

/// The group a file's recordings go to: its folder relative to the argument, or, for a file
/// named itself (or sitting right in the argument folder), the argument's own name.
fn group_of(root: &Path, file: &Path) -> PathBuf {
    let folder = file.parent().unwrap_or(Path::new(""));
    match folder.strip_prefix(root) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.to_path_buf(),
        Ok(_) => PathBuf::from(name_of(root)),
        Err(_) => PathBuf::from(
            file.file_stem()
                .map_or_else(|| "recordings".into(), |stem| stem.to_string_lossy())
                .trim_end_matches(".yaml")
                .to_owned(),
        ),
    }
}

/// Where a test's cassette goes, without `.yaml`, in pytest-recording's layout
/// (`cassettes/<module>/<test>.yaml`, its `{cls}.{test}` for a method):
/// `tests/test_weather.py::test_loop` → `test_weather/test_loop`,
/// `tests/t.py::TestA::test_b[1]` → `t/TestA.test_b[1]`. A name without `::` (another runner's)
/// goes to its cassette folder ([`cassette::folder`]). Each part is one safe file name: never
/// empty, never `..`, no separator, at most [`MAX_FILE_PART`] bytes.
pub fn cassette_file(name: &str) -> PathBuf {
    let Some((file, test)) = name.split_once("::") else {
        return cassette::folder(name);
    };
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file).trim();
    let module = match base.rsplit_once('.') {
        Some((stem, _extension)) if !stem.is_empty() => stem,
        _ => base,
    };
    let test: Vec<&str> = test.split("::").map(str::trim).collect();
    PathBuf::from(file_part(module)).join(file_part(&test.join(".")))
}

/// The most bytes of one part of a cassette's path.
const MAX_FILE_PART: usize = 200;

/// `text` as one file name: separators, control characters and NUL become `_`, as does a
/// leading `.`; cut to [`MAX_FILE_PART`] bytes at a character boundary; `_` when empty.
fn file_part(text: &str) -> String {
    let mut part = String::with_capacity(text.len().min(MAX_FILE_PART));
    for c in text.chars() {
        let c = if c == '/' || c == '\\' || c.is_control() {
            '_'
        } else {
            c
        };
        if part.len() + c.len_utf8() > MAX_FILE_PART {
            break;
        }
        part.push(c);
    }
    if part.starts_with('.') {
        part.replace_range(0..1, "_");
    }
    if part.is_empty() {
        part.push('_');
    }
    part
}

/// A folder's last name (`recordings` for `.` or `/`).
fn name_of(root: &Path) -> String {
    let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    absolute.file_name().map_or_else(
        || "recordings".into(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// Recordings in the order their exchanges started (ids break ties), as served to a client.
fn ordered(recordings: &mut [Recording]) -> Vec<&Recording> {
    recordings.sort_by(|a, b| {
        (a.meta.started.as_str(), a.meta.id.as_str())
            .cmp(&(b.meta.started.as_str(), b.meta.id.as_str()))
    });
    for recording in recordings.iter_mut() {
        as_served(recording);
    }
    recordings.iter().collect()
}

/// An enforced exchange exported as the client received it (what `replay` serves): the
/// frames up to the cut and the error event, or the 502.
fn as_served(recording: &mut Recording) {
    if recording
        .end
        .as_ref()
        .is_some_and(|end| end.enforced.is_some())
    {
        let frames = crate::record::served::served_frames(recording);
        recording.frames = frames.iter().cloned().collect();
        if let Some(end) = recording.end.as_mut() {
            end.enforced = None;
        }
    }
}

fn write_cassettes(
    out: &Path,
    groups: &mut BTreeMap<PathBuf, Vec<Recording>>,
    redactor: &Redactor,
) -> Result<(usize, usize), String> {
    let (mut files, mut exchanges) = (0, 0);
    for (group, recordings) in groups.iter_mut() {
        let ordered = ordered(recordings);
        let mut path = out.join(group).into_os_string();
        path.push(".yaml");
        let path = PathBuf::from(path);
        write_file(&path, super::vcr::write(&ordered, redactor).as_bytes())?;
        files += 1;
        exchanges += ordered.len();
    }
    Ok((files, exchanges))
}

fn write_har(
    out: &Path,
    groups: &mut BTreeMap<PathBuf, Vec<Recording>>,
    redactor: &Redactor,
) -> Result<(usize, usize), String> {
    let mut all: Vec<Recording> = std::mem::take(groups).into_values().flatten().collect();
    let ordered = ordered(&mut all);
    let document = super::har::write(&ordered, redactor);
    let text = serde_json::to_vec_pretty(&document).map_err(|error| error.to_string())?;
    write_file(&out.join("tooltap.har"), &text)?;
    Ok((1, ordered.len()))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)
            .map_err(|error| format!("{}: cannot create: {error}", folder.display()))?;
    }
    std::fs::write(path, bytes)
        .map_err(|error| format!("{}: cannot write: {error}", path.display()))
}

/// The URL the client would have reached without tooltap: the upstream base and the path
/// (the route's prefix, when it had one, is not recorded: the client's path is kept).
pub fn url(meta: &Meta) -> String {
    let base = if meta.upstream.is_empty() {
        "http://localhost"
    } else {
        meta.upstream.trim_end_matches('/')
    };
    match &meta.query {
        Some(query) => format!("{base}{}?{query}", meta.path),
        None => format!("{base}{}", meta.path),
    }
}

/// Headers no fixture should carry: hop-by-hop ones, and lengths a reader recomputes.
const DROPPED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
];

fn kept(redactor: &Redactor, name: &str, value: &str) -> bool {
    !redactor.is_secret_header(name) && value != REDACTED && !DROPPED.contains(&name)
}

/// The request's headers without credentials, hop-by-hop headers or a length.
pub fn request_headers(meta: &Meta, redactor: &Redactor) -> Vec<(String, String)> {
    meta.request
        .headers
        .iter()
        .filter(|(name, value)| kept(redactor, name, value) && name != "content-length")
        .cloned()
        .collect()
}

/// The response's headers as the client got them, without credentials or hop-by-hop headers,
/// and without a `content-length` that no longer equals the body.
pub fn response_headers(
    meta: &Meta,
    body_len: usize,
    redactor: &Redactor,
) -> Vec<(String, String)> {
    meta.response
        .headers
        .iter()
        .filter(|(name, value)| {
            kept(redactor, name, value)
                && (name != "content-length" || value.trim() == body_len.to_string())
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Component;

    #[test]
    fn a_pytest_id_becomes_pytest_recordings_module_and_test() {
        let cases = [
            ("tests/test_weather.py::test_loop", "test_weather/test_loop"),
            ("tests/t.py::TestA::test_b[1-x]", "t/TestA.test_b[1-x]"),
            ("test_flat.py::test_a", "test_flat/test_a"),
            ("weather > loop", "weather___loop"),
            ("src/a.test.ts/loop", "src/a.test.ts/loop"),
        ];
        for (name, file) in cases {
            assert_eq!(cassette_file(name), PathBuf::from(file), "{name}");
        }
    }

    #[test]
    fn no_cassette_name_leaves_the_export_folder() {
        let long = format!("{}::{}", "m".repeat(5000), "é".repeat(5000));
        let attacks = [
            "../../x.py::../../y",
            "..::..",
            "::",
            "/etc/passwd::/etc/shadow",
            "a.py::b\0c",
            ".py::.hidden",
            long.as_str(),
        ];
        for attack in attacks {
            let file = cassette_file(attack);
            assert!(file.is_relative(), "{attack:?} → {file:?}");
            for component in file.components() {
                let Component::Normal(part) = component else {
                    panic!("{attack:?} → {file:?}");
                };
                let part = part.to_string_lossy();
                assert!(!part.starts_with('.'), "{attack:?} → {file:?}");
                assert!(part.len() <= MAX_FILE_PART, "{attack:?}");
                assert!(!part.contains(['/', '\\', '\0']), "{attack:?}");
            }
        }
    }
}

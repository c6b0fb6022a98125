//! `tooltap export --format vcr|har RECORDINGS -o DIR`: recordings as other tools' fixtures.
//!
//! Input: recording files and folders (tooltap's own; cassettes and HAR files are read too), the
//! format and the output folder. Output: for `vcr`, one cassette per folder of recordings,
//! `DIR/<folder relative to the argument>.yaml` (a file named on the command line gives
//! `DIR/<its name>.yaml`), interactions in the order the exchanges started: pytest-recording's
//! `cassettes/<module>/<test>.yaml` when the folder is a test's; for `har`, one file,
//! `DIR/tooltap.har`, with every exchange. A message per file that could not be read on
//! `stderr`; exit code 0, or 2 when any input was unreadable (the rest is still written).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Format;
use crate::check::inputs::{self, DEFAULT_MAX_INPUT_BYTES};
use crate::record::Recording;
use crate::record::format::Meta;
use crate::record::read::each_recording;
use crate::redact::{REDACTED, Redactor};

/// Flags of `tooltap export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Recording files or folders (folders are walked for `*.jsonl`, cassettes and HAR files).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// `vcr`: vcrpy cassettes (YAML), one per folder of recordings. `har`: one HAR 1.2 file.
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
        let (files, missing) = inputs::collect(std::slice::from_ref(root), args.max_input_bytes);
        problems.extend(missing);
        for file in files {
            let group = group_of(root, &file);
            let read =
                each_recording(
                    &file,
                    args.max_input_bytes,
                    &mut buffer,
                    |recording| match recording {
                        Ok(recording) => groups.entry(group.clone()).or_default().push(recording),
                        Err(error) => problems.push(error.to_string()),
                    },
                );
            if read == crate::record::read::FileRead::UnfinishedSegment {
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
        let frames = crate::replay::library::served_frames(recording);
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

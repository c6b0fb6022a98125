//! Where a recording lives on disk and how its files and folders are created.
//!
//! Input: the route name, the exchange id and start time from the recorder. Output: the
//! `<dir>/<route>/<yyyy-mm-dd>/<id>.jsonl` path, its temporary sibling `.<id>.jsonl.tmp` (which
//! `tooltap check` never picks up: it is hidden and does not end in `.jsonl`), and owner-only
//! files (0600) and folders (0700). Path segments come from the route and the id only, each
//! reduced to `[A-Za-z0-9._-]`, so no request data can steer a path.

use std::fs::{DirBuilder, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Longest path segment kept from a route name or an id.
const MAX_SEGMENT: usize = 96;
/// The suffix of an unfinished recording.
pub const TEMP_SUFFIX: &str = ".jsonl.tmp";

/// The final and temporary paths of one recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingPaths {
    pub folder: PathBuf,
    pub temp: PathBuf,
    pub done: PathBuf,
}

impl RecordingPaths {
    pub fn new(root: &Path, route: &str, started: SystemTime, id: &str) -> RecordingPaths {
        let folder = root.join(segment(route)).join(utc_date(started));
        let id = segment(id);
        RecordingPaths {
            temp: folder.join(format!(".{id}{TEMP_SUFFIX}")),
            done: folder.join(format!("{id}.jsonl")),
            folder,
        }
    }
}

/// A safe single path segment: other characters become `_`, no leading dot, never empty.
pub fn segment(text: &str) -> String {
    let mut clean: String = text
        .chars()
        .take(MAX_SEGMENT)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.starts_with('.') {
        clean.replace_range(0..1, "_");
    }
    if clean.is_empty() {
        clean.push('_');
    }
    clean
}

/// `yyyy-mm-dd` in UTC.
pub fn utc_date(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time)
        .to_string()
        .chars()
        .take(10)
        .collect()
}

/// Creates `folder` and any missing parents, owner-only.
pub fn create_folder(folder: &Path) -> std::io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(folder)
}

/// Whether recordings can be written under `folder`: creates it (owner-only) and a hidden probe
/// file, then removes the probe. Run at start, so a bad `--recordings` is said at once rather
/// than at the first violation.
pub fn probe_folder(folder: &Path) -> std::io::Result<()> {
    create_folder(folder)?;
    let probe = folder.join(format!(".tooltap-probe-{}", std::process::id()));
    create_file(&probe)?;
    std::fs::remove_file(&probe)
}

/// Creates (or empties) a file readable and writable by its owner only.
pub fn create_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// The violations file's name under the old default (`recordings/violations.jsonl`): never a
/// recording (exchange ids start with `t`), so a folder walk skips it.
pub const OLD_VIOLATIONS_NAME: &str = "violations.jsonl";

/// Whether a path is a finished recording (`*.jsonl`, not hidden, not a violations file left
/// in the folder by the old default layout).
pub fn is_recording(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.ends_with(".jsonl") && !name.starts_with('.') && name != OLD_VIOLATIONS_NAME
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn paths_come_from_route_date_and_id_only() {
        let started = UNIX_EPOCH + Duration::from_secs(1_796_212_800); // 2026-12-02
        let paths = RecordingPaths::new(Path::new("/r"), "../etc", started, "t1-7/../x");
        assert_eq!(paths.folder, PathBuf::from("/r/_._etc/2026-12-02"));
        assert_eq!(
            paths.done,
            PathBuf::from("/r/_._etc/2026-12-02/t1-7_.._x.jsonl")
        );
        assert_eq!(
            paths.temp,
            PathBuf::from("/r/_._etc/2026-12-02/.t1-7_.._x.jsonl.tmp")
        );
        assert!(is_recording(&paths.done));
        assert!(!is_recording(&paths.temp));
        assert!(!is_recording(Path::new("/r/violations.jsonl")));
        assert_eq!(segment(""), "_");
        assert_eq!(segment("a b/c"), "a_b_c");
    }
}

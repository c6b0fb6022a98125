//! Recording files of every format, tooltap's own and other tools' fixtures alike: which files
//! the paths `check`, `report` and `export` are given hold ([`collect`]: folders walked, sorted,
//! each file bounded), and each recording one file holds ([`each_recording`], which hands a
//! cassette or a HAR file to [`super::read`] and tooltap's own to [`crate::record::read`]).
//!
//! It lives here, above `record` (which knows only its own format) and below the commands that
//! read recordings (`check`, `report`, `replay`, `export`), so that each imports one way.

use std::path::{Path, PathBuf};

use super::{Format, ImportNote, MAX_FOREIGN_BYTES, is_importable};
use crate::record::ReadError;
use crate::record::Recording;
use crate::record::layout::is_recording;
use crate::record::read::{KEPT_BUFFER, parse_each, read_bounded, unfinished_segment};

/// Folders deeper than this are not walked (a symlink loop ends here).
const MAX_DEPTH: usize = 32;
/// The default `--max-input-bytes`: a recording holds at most `max_bytes_per_recording`
/// (16 MiB) of body, base64 and JSON framing can double that; 256 MiB leaves ample room.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// Recording files under `paths` (a named file is taken whatever its name; folders give their
/// `*.jsonl` files, never hidden temporary ones, and other tools' fixtures: `*.yaml`, `*.yml`,
/// `*.yaml.gz`, `*.har`, see [`super::is_importable`]), sorted, and a message per missing path.
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
                if is_recording(&path) || is_importable(&path) {
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
            Ok(meta) if meta.is_file() && (is_recording(&path) || is_importable(&path)) => {
                found.push((path, Some(meta)))
            }
            _ => {}
        }
    }
}

/// Every recording of a file that may be a segment ([`crate::record::read::parse_all`]), read as
/// [`crate::record::read_file_bounded`] reads one: a file that cannot be read is one error.
pub fn read_all_bounded(
    path: &Path,
    max_bytes: u64,
    buffer: &mut Vec<u8>,
) -> Vec<Result<Recording, ReadError>> {
    let mut all = Vec::new();
    each_recording(path, max_bytes, buffer, |recording| all.push(recording));
    all
}

/// [`read_all_bounded`] handing each recording to `take` as soon as it is read, in file order,
/// instead of holding them all: a reader that is done with one before the next (`check`)
/// keeps one recording in memory, not a whole segment's, and its allocations are reused.
/// Returns [`FileRead::UnfinishedSegment`] for a segment with no whole line yet, which hands
/// nothing over, so that a reader can say it skipped the file.
pub fn each_recording(
    path: &Path,
    max_bytes: u64,
    buffer: &mut Vec<u8>,
    mut take: impl FnMut(Result<Recording, ReadError>),
) -> FileRead {
    let foreign = Format::of(path);
    // Another tool's fixture is bounded even for a reader that bounds nothing else (replay):
    // its YAML tree and a gzip'd cassette's inflated text grow with it.
    let max_bytes = match foreign {
        Some(_) => max_bytes.min(MAX_FOREIGN_BYTES),
        None => max_bytes,
    };
    let read = match read_bounded(path, max_bytes, buffer) {
        Ok(()) if let Some(format) = foreign => {
            let note = super::read(format, path, buffer, max_bytes, &mut take);
            match note.exchanges {
                // Nothing imported: the error in its place names the file.
                0 => FileRead::Read,
                _ => FileRead::Imported(note),
            }
        }
        Ok(()) if unfinished_segment(path, buffer) => FileRead::UnfinishedSegment,
        Ok(()) => {
            parse_each(path, buffer, &mut take);
            FileRead::Read
        }
        Err(error) => {
            take(Err(error));
            FileRead::Read
        }
    };
    if buffer.capacity() > KEPT_BUFFER {
        *buffer = Vec::new();
    }
    read
}

/// What [`each_recording`] made of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRead {
    /// Every recording (or the error that stood in its place) was handed over.
    Read,
    /// A segment that holds no whole line (empty, or its first recording cut: tooltap was
    /// killed as it began it): no recording, and no error.
    UnfinishedSegment,
    /// Another tool's fixture (a vcrpy cassette, a HAR file), read through
    /// [`super::read`]: every exchange was handed over, and the note says how its
    /// frame boundaries were made.
    Imported(ImportNote),
}

impl FileRead {
    /// The note a reader prints for the file (one it skipped, one it imported), or `None`.
    pub fn note(self, path: &Path) -> Option<String> {
        match self {
            FileRead::Read => None,
            FileRead::Imported(note) => Some(note.text(path)),
            FileRead::UnfinishedSegment => Some(format!(
                "{}: a segment with no whole recording yet (tooltap stopped as it began one); skipped",
                path.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

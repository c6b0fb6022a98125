//! The start-up sweep: temporary recording files that a dead process left behind.
//!
//! Input: the recordings folder, before the recorder writes anything. Output: the stale
//! temporary files deleted, and their count (logged by the caller). Only tooltap's own
//! temporary names are touched (hidden, ending `.jsonl.tmp`), only where the layout puts them
//! (`<dir>/<route>/<date>/` and the cassette folders, at most eight levels down, never the top),
//! only plain files (never a link or what it points to). A name
//! of this version (`.<id>~<random>.jsonl.tmp`, see [`super::layout`]) is locked by its
//! process while it lives, so it is stale when its lock can be taken; an older version's name
//! (`.<id>.jsonl.tmp`), which no lock protects, when unmodified for [`LEGACY_AGE`]. A crash, a
//! SIGKILL, a cut or a full disk used to leave them for good.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::layout::{TEMP_RANDOM_MARK, TEMP_SUFFIX};

/// How long an older version's temporary file must have been left unmodified to be stale.
pub const LEGACY_AGE: Duration = Duration::from_secs(3600);
/// The deepest folder searched: a cassette's folder (see [`super::cassette::folder`]).
const MAX_DEPTH: usize = super::cassette::MAX_FOLDER_DEPTH;

/// Deletes the stale temporary files under `dir`; returns how many. Unreadable folders and
/// files that cannot be removed are skipped: the sweep never stops a start.
pub fn stale_temps(dir: &Path) -> usize {
    let mut swept = 0;
    // Below the top: `<route>/<date>/` and the cassette folders, at most this deep.
    let mut folders: Vec<(std::path::PathBuf, usize)> = subfolders(dir)
        .into_iter()
        .map(|folder| (folder, 1))
        .collect();
    while let Some((folder, depth)) = folders.pop() {
        if depth < MAX_DEPTH {
            folders.extend(subfolders(&folder).into_iter().map(|sub| (sub, depth + 1)));
        }
        let Ok(items) = std::fs::read_dir(&folder) else {
            continue;
        };
        for item in items.flatten() {
            let name = item.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            let plain = item.file_type().is_ok_and(|kind| kind.is_file());
            if plain
                && is_temp_name(name)
                && is_stale(&item.path(), name)
                && std::fs::remove_file(item.path()).is_ok()
            {
                swept += 1;
            }
        }
    }
    swept
}

/// The folders (not links to folders, not hidden) in `dir`.
fn subfolders(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(items) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    items
        .flatten()
        .filter(|item| item.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter(|item| !item.file_name().to_string_lossy().starts_with('.'))
        .map(|item| item.path())
        .collect()
}

/// A temporary name tooltap writes: a recording's or a segment's being created.
fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(TEMP_SUFFIX)
}

fn is_stale(path: &Path, name: &str) -> bool {
    if name.contains(TEMP_RANDOM_MARK) {
        // Open without following a link (it was a plain file a moment ago), and without
        // truncating; the lock is released with the handle.
        return open_plain(path).is_ok_and(|file| file.try_lock().is_ok());
    }
    std::fs::symlink_metadata(path)
        .and_then(|meta| meta.modified())
        .is_ok_and(|modified| {
            SystemTime::now()
                .duration_since(modified)
                .is_ok_and(|age| age >= LEGACY_AGE)
        })
}

fn open_plain(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

#[cfg(test)]
mod tests;

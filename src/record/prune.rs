//! Oldest-first pruning of finished recordings, when a total size or count is configured.
//!
//! Input: the recordings folder (scanned once, lazily, when the first recording is kept) and
//! every recording the writer thread finishes afterwards. Output: deleted files (and the date
//! and route folders they leave empty). Owned by the writer thread alone, so no locking.
//! Only files in the recording layout (`<route>/<date>/<id>.jsonl`) are ever counted or
//! deleted: a violations file or anything else at the top of the folder is left alone.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::layout::is_recording;

/// How deep the scan goes: `<route>/<date>/<file>` is three levels; a little slack for hands.
const MAX_DEPTH: usize = 4;
/// Recordings live two folders down (`<route>/<date>/`): a file higher up (a violations file
/// put in the recordings folder, a README, notes) is never counted and never deleted.
const RECORDING_DEPTH: usize = 2;

/// Limits on what the recordings folder may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneLimits {
    pub max_total_bytes: Option<u64>,
    pub max_files: Option<usize>,
}

/// The kept recordings, oldest first.
#[derive(Debug)]
pub struct Pruner {
    root: PathBuf,
    limits: PruneLimits,
    files: Option<VecDeque<(PathBuf, u64)>>,
    total: u64,
    /// The size of the last recording added: the estimate of the next one's.
    last_size: u64,
}

impl Pruner {
    pub fn new(root: PathBuf, limits: PruneLimits) -> Pruner {
        Pruner {
            root,
            limits,
            files: None,
            total: 0,
            last_size: 0,
        }
    }

    fn enabled(&self) -> bool {
        self.limits.max_total_bytes.is_some() || self.limits.max_files.is_some()
    }

    /// Lists the folder's recordings the first time it is asked; `true` when it did now.
    fn scan_once(&mut self) -> bool {
        if self.files.is_some() {
            return false;
        }
        let files = scan(&self.root);
        self.total = files.iter().map(|(_, size)| size).sum();
        self.files = Some(files);
        true
    }

    /// Notes a newly finished recording and deletes the oldest ones while over a limit.
    /// Returns the paths deleted. The newest file counts like any other: a limit smaller than
    /// one recording keeps nothing, which is what a disk-protection limit should do.
    pub fn added(&mut self, path: PathBuf, size: u64) -> Vec<PathBuf> {
        if !self.enabled() {
            return Vec::new();
        }
        let scanned_now = self.scan_once();
        let Some(files) = self.files.as_mut() else {
            return Vec::new();
        };
        // The first scan already sees the new file: don't count it twice. Later files are new
        // by construction (ids are unique and a name is never replaced), so no search: a
        // search per added file would make `--record all` quadratic in the folder's size (see
        // docs/benchmarks.md#prune).
        if !scanned_now || !files.iter().any(|(p, _)| *p == path) {
            files.push_back((path, size));
            self.total += size;
        }
        self.last_size = size;
        self.prune()
    }

    /// Notes a segment file that was closed at `size` bytes (see `segment.rs`) and deletes the
    /// oldest recordings while over a limit. The folder scan may have listed the segment while
    /// it was open, at a smaller size: then that entry takes the final size. A search per
    /// segment, not per recording: a segment holds megabytes of recordings.
    pub fn added_segment(&mut self, path: PathBuf, size: u64) -> Vec<PathBuf> {
        if !self.enabled() {
            return Vec::new();
        }
        self.scan_once();
        let Some(files) = self.files.as_mut() else {
            return Vec::new();
        };
        match files.iter_mut().find(|(listed, _)| *listed == path) {
            Some(entry) => {
                self.total = self.total.saturating_sub(entry.1).saturating_add(size);
                entry.1 = size;
            }
            None => {
                files.push_back((path, size));
                self.total += size;
            }
        }
        self.prune()
    }

    /// Deletes the oldest listed recordings while over a limit; returns their paths.
    fn prune(&mut self) -> Vec<PathBuf> {
        let mut deleted = Vec::new();
        while over(self.limits, self.listed(), self.total) {
            let Some(oldest) = self.pop_oldest() else {
                break;
            };
            if std::fs::remove_file(&oldest.path).is_ok() {
                self.left(&oldest);
                deleted.push(oldest.path);
            }
        }
        deleted
    }

    /// How many recordings are listed.
    fn listed(&self) -> usize {
        self.files.as_ref().map_or(0, VecDeque::len)
    }

    /// Takes the oldest listed recording out of the list (and out of the byte total).
    fn pop_oldest(&mut self) -> Option<Pruned> {
        let files = self.files.as_mut()?;
        let (path, size) = files.pop_front()?;
        self.total = self.total.saturating_sub(size);
        let last_in_folder = !shares_folder(files.front(), &path);
        Some(Pruned {
            path,
            last_in_folder,
        })
    }

    /// Called as a recording opens, with the number of recordings already open (unfinished,
    /// so not listed yet): when these and the new one would put the folder over a limit (the
    /// file count exactly; the byte total estimated with the last recording's size), the
    /// oldest recording leaves the list and is handed over, for the writer to reuse its file
    /// rather than create a new one and delete this one a moment later. The caller renames or
    /// deletes it, then calls [`Pruner::left`].
    pub fn take_for_reuse(&mut self, open: usize) -> Option<Pruned> {
        if !self.enabled() {
            return None;
        }
        self.scan_once();
        let coming = open as u64 + 1;
        let next_total = self
            .total
            .saturating_add(self.last_size.saturating_mul(coming));
        if !over(self.limits, self.listed() + open + 1, next_total) {
            return None;
        }
        self.pop_oldest()
    }

    /// A pruned recording has left its name (renamed or deleted): remove the folders that
    /// emptied.
    pub fn left(&self, pruned: &Pruned) {
        if pruned.last_in_folder {
            remove_empty_parents(&self.root, &pruned.path);
        }
    }
}

/// The oldest recording, taken out of the list: deleted by [`Pruner::added`], or handed over
/// by [`Pruner::take_for_reuse`] for its file to be reused.
#[derive(Debug)]
pub struct Pruned {
    pub path: PathBuf,
    /// No other listed recording is in its folder: the folder may be empty once it leaves.
    last_in_folder: bool,
}

/// Whether the next listed recording is in the same folder as `path` (then that folder is not
/// empty, and trying to remove it would only cost a failing syscall per pruned file).
fn shares_folder(next: Option<&(PathBuf, u64)>, path: &Path) -> bool {
    next.is_some_and(|(next, _)| next.parent() == path.parent())
}

fn over(limits: PruneLimits, count: usize, total: u64) -> bool {
    limits.max_files.is_some_and(|max| count > max)
        || limits.max_total_bytes.is_some_and(|max| total > max)
}

/// Every finished recording under `root`, oldest (by modification time, then path) first.
fn scan(root: &Path) -> VecDeque<(PathBuf, u64)> {
    recordings_under(root, RECORDING_DEPTH)
        .into_iter()
        .map(|(_, path, size)| (path, size))
        .collect()
}

/// Every finished recording at least `min_depth` folders below `root` (and at most
/// [`MAX_DEPTH`]), with its modification time and size, oldest first (then by path).
pub(super) fn recordings_under(root: &Path, min_depth: usize) -> Vec<(SystemTime, PathBuf, u64)> {
    let mut found: Vec<(SystemTime, PathBuf, u64)> = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() && depth < MAX_DEPTH {
                stack.push((path, depth + 1));
            } else if meta.is_file() && depth >= min_depth && is_recording(&path) {
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((modified, path, meta.len()));
            }
        }
    }
    found.sort();
    found
}

/// Removes the date and route folders a deletion emptied (never `root` itself).
fn remove_empty_parents(root: &Path, file: &Path) {
    let mut current = file.parent();
    while let Some(dir) = current {
        if dir == root || !dir.starts_with(root) || std::fs::remove_dir(dir).is_err() {
            break;
        }
        current = dir.parent();
    }
}

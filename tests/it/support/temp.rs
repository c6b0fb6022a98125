//! The one temporary folder of the test suite: fresh and empty when made, removed when dropped.
//!
//! Input: a tag naming the test; output: a [`TempDir`] that derefs to its [`Path`]. The folder is
//! a `tempfile` one (a unique name, created with owner-only permissions, removed on drop); the
//! tag goes into its name so that a folder left by a killed test says whose it was.

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A fresh, empty directory under the system temp dir, removed (with its content) on drop.
#[derive(Debug)]
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("tooltap-{tag}-"))
            .tempdir()
            .expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// Every file under `dir`, recursively, sorted; an unreadable folder contributes nothing.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every `*.jsonl` file under `dir` (recordings, violations files), recursively, sorted.
pub fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = files_under(dir);
    files.retain(|path| path.extension().is_some_and(|ext| ext == "jsonl"));
    files
}

#[test]
fn a_temp_dir_is_fresh_unique_and_removed_on_drop() {
    let first = TempDir::new("temp-self");
    let second = TempDir::new("temp-self");
    assert_ne!(first.path(), second.path(), "same tag, distinct folders");
    std::fs::write(first.join("file"), "x").expect("write");
    let kept = first.path().to_path_buf();
    drop(first);
    assert!(!kept.exists(), "removed with its content on drop");
    assert!(second.is_dir());
    std::fs::create_dir_all(second.join("a/b")).expect("mkdir");
    std::fs::write(second.join("a/b/x.jsonl"), "").expect("write");
    std::fs::write(second.join("a/y.txt"), "").expect("write");
    assert_eq!(files_under(&second).len(), 2);
    assert_eq!(jsonl_under(&second), vec![second.join("a/b/x.jsonl")]);
}

/// The lines of a JSON-lines file (a violations file), each parsed; none when it is missing.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("violation line"))
        .collect()
}

/// A path named `name` in a fresh folder of its own, removed with it when dropped.
pub struct TempFile {
    path: PathBuf,
    _dir: TempDir,
}

impl std::ops::Deref for TempFile {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.path
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

pub fn temp_file(name: &str) -> TempFile {
    let dir = TempDir::new(&format!("it-{}", name.replace('/', "-")));
    TempFile {
        path: dir.join(name),
        _dir: dir,
    }
}

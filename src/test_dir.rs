//! A temporary folder for the library's unit tests, removed when dropped (also when the test
//! fails), so unit tests leave nothing behind in the temp directory.
//!
//! Input: a name for the folder. Output: a fresh, empty folder under `std::env::temp_dir()`,
//! unique per process and per call, that derefs to its `Path`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Folders made by this process so far, for unique names.
static MADE: AtomicUsize = AtomicUsize::new(0);

/// A fresh folder, removed on drop.
#[derive(Debug)]
pub(crate) struct TestDir(PathBuf);

impl TestDir {
    /// A new empty folder named `tooltap-<name>-<pid>-<n>`.
    pub(crate) fn new(name: &str) -> TestDir {
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("tooltap-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a temporary folder for a unit test");
        TestDir(path)
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_folder_exists_until_dropped() {
    let dir = TestDir::new("test-dir");
    let path = dir.to_path_buf();
    std::fs::write(dir.join("x"), "x").expect("write");
    assert!(path.is_dir());
    drop(dir);
    assert!(!path.exists());
}

//! A temporary folder for the library's unit tests, removed when dropped (also when the test
//! fails), so unit tests leave nothing behind in the temp directory.
//!
//! Input: a name for the folder. Output: a fresh, empty `tempfile` folder under
//! `std::env::temp_dir()` (a unique name, owner-only permissions) that derefs to its `Path`.

use std::path::Path;

/// A fresh folder, removed on drop.
#[derive(Debug)]
pub(crate) struct TestDir(tempfile::TempDir);

impl TestDir {
    /// A new empty folder named `tooltap-<name>-<random>`.
    pub(crate) fn new(name: &str) -> TestDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("tooltap-{name}-"))
            .tempdir()
            .expect("a temporary folder for a unit test");
        TestDir(dir)
    }
}

impl std::ops::Deref for TestDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        self.0.path()
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

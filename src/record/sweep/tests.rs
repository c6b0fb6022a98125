use super::*;
use crate::record::layout::{RecordingPaths, create_file, create_folder};

#[test]
fn only_a_dead_processs_temporary_files_inside_the_layout_are_swept() {
    let dir = crate::test_dir::TestDir::new("sweep");
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_212_800);
    let dead = RecordingPaths::new(&dir, "default", started, "t1-dead");
    let live = RecordingPaths::new(&dir, "default", started, "t1-live");
    create_folder(&dead.folder).expect("folder");
    drop(create_file(&dead.temp).expect("create"));
    // Held open, as the writer thread holds a recording being written.
    let _held = create_file(&live.temp).expect("create");
    // An older version's name: stale only once unmodified for an hour.
    let old_recent = dead.folder.join(".t0-recent.jsonl.tmp");
    let old_stale = dead.folder.join(".t0-stale.jsonl.tmp");
    std::fs::write(&old_recent, "x").expect("write");
    let file = File::create(&old_stale).expect("create");
    file.set_modified(SystemTime::now() - LEGACY_AGE - Duration::from_secs(60))
        .expect("mtime");
    drop(file);
    // A cassette's folder is in the layout too, one level down or several.
    let cassette = RecordingPaths::in_cassette(&dir, "tests/t.py::test_a", "t1-cassette");
    let shallow = RecordingPaths::in_cassette(&dir, "weather", "t1-shallow");
    for paths in [&cassette, &shallow] {
        create_folder(&paths.folder).expect("folder");
        drop(create_file(&paths.temp).expect("create"));
    }
    // Never touched: a finished recording, other hidden files, temporary names at the top
    // of the folder, and a link named like a temporary file (nor what it points to).
    let kept = [
        dead.done.clone(),
        dead.folder.join(".notes"),
        dir.join(".t2~0123456789abcdef.jsonl.tmp"),
    ];
    for path in &kept {
        std::fs::write(path, "keep").expect("write");
    }
    let target = dir.join("target.txt");
    std::fs::write(&target, "keep").expect("write");
    let link = dead.folder.join(".t4~0123456789abcdef.jsonl.tmp");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");

    assert_eq!(
        stale_temps(&dir),
        4,
        "the dead one, the old stale one and the two cassettes'"
    );
    assert!(!dead.temp.exists());
    assert!(!cassette.temp.exists() && !shallow.temp.exists());
    assert!(!old_stale.exists());
    assert!(live.temp.exists(), "a live process's file is locked, kept");
    assert!(old_recent.exists());
    for path in &kept {
        assert!(path.exists(), "{} kept", path.display());
    }
    assert!(
        link.symlink_metadata().is_ok(),
        "the link is not a plain file: kept"
    );
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep");
    assert_eq!(stale_temps(&dir.join("missing")), 0);
}

//! Segment files: finished recordings appended whole to one file per route and day.
//!
//! Input: a finished recording's lines (held in the writer thread's memory while it was open, see
//! `disk.rs`) and its [`RecordingPaths`]. Output: appends to `<route>/<date>/segment-<id>.jsonl`,
//! named after the first recording it holds; a segment is closed when the next recording would
//! take it past `max_bytes` or the date folder changes, and its final size goes to the pruner.
//! Writes go through one 64 KiB buffer per segment, flushed when the writer thread has handled a
//! burst of messages: a busy proxy makes one `write` per burst, and no file is created, renamed
//! or deleted per exchange (on ext4, those directory operations were most of what `--record all`
//! cost; see docs/benchmarks.md). A segment gets its name once its first recording is in it
//! (written under a temporary name, then linked), and only whole recordings are appended, so a
//! reader sees complete recordings and at most a partial last one (a crash, or a read between
//! two flushes), read as a file that lost its end.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::layout::{RecordingPaths, create_folder};

/// The write buffer of one segment.
const BUFFER: usize = 64 * 1024;
/// Name variants tried when `segment-<id>.jsonl` is taken (another process, a restart).
const NAME_ATTEMPTS: usize = 16;

/// The open segments, one per route folder and one for every cassette folder together (see
/// `RecordingPaths::segment_slot`): a recording for another folder of the same slot closes it.
#[derive(Debug)]
pub(super) struct Segments {
    max_bytes: u64,
    open: HashMap<PathBuf, Segment>,
}

#[derive(Debug)]
struct Segment {
    /// The date folder it is in.
    folder: PathBuf,
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
    /// When its first recording was written (segments are closed by age when uploading).
    opened: std::time::Instant,
}

/// A segment that was closed: its final size, for the pruner.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Closed {
    pub path: PathBuf,
    pub size: u64,
}

impl Segments {
    pub(super) fn new(max_bytes: u64) -> Segments {
        Segments {
            max_bytes: max_bytes.max(1),
            open: HashMap::new(),
        }
    }

    /// Appends one whole recording to its route's segment, closing that segment first (into
    /// `closed`) when the recording would take it past the size bound or belongs to another
    /// day (or another cassette), and opening the next one named after this recording. A segment that fails to write
    /// is dropped (the next recording starts a new one) and the error returned.
    pub(super) fn append(
        &mut self,
        paths: &RecordingPaths,
        recording: &[u8],
        closed: &mut Vec<Closed>,
    ) -> std::io::Result<()> {
        let route = paths.segment_slot.as_path();
        let cut = self.open.get(route).is_some_and(|segment| {
            segment.folder != paths.folder
                || (segment.written > 0
                    && segment.written + recording.len() as u64 > self.max_bytes)
        });
        if cut && let Some(segment) = self.open.remove(route) {
            closed.push(segment.close()?);
        }
        let segment = match self.open.entry(route.to_path_buf()) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(Segment::create(paths, recording)?);
                return Ok(());
            }
        };
        match segment.out.write_all(recording) {
            Ok(()) => {
                segment.written += recording.len() as u64;
                Ok(())
            }
            Err(error) => {
                self.open.remove(route);
                Err(error)
            }
        }
    }

    /// Writes out every segment's buffer; a segment that fails is dropped, its error returned.
    pub(super) fn flush(&mut self) -> Vec<(PathBuf, std::io::Error)> {
        let mut broken = Vec::new();
        self.open.retain(|_, segment| match segment.out.flush() {
            Ok(()) => true,
            Err(error) => {
                broken.push((segment.path.clone(), error));
                false
            }
        });
        broken
    }

    /// Closes the segments opened at least `age` ago (`Duration::ZERO`: all of them), into
    /// `closed`; a segment that fails to flush is dropped, its error returned.
    pub(super) fn close_older_than(
        &mut self,
        age: std::time::Duration,
        closed: &mut Vec<Closed>,
    ) -> Vec<(PathBuf, std::io::Error)> {
        let old: Vec<PathBuf> = self
            .open
            .iter()
            .filter(|(_, segment)| segment.opened.elapsed() >= age)
            .map(|(slot, _)| slot.clone())
            .collect();
        let mut broken = Vec::new();
        for slot in old {
            if let Some(segment) = self.open.remove(&slot) {
                let path = segment.path.clone();
                match segment.close() {
                    Ok(done) => closed.push(done),
                    Err(error) => broken.push((path, error)),
                }
            }
        }
        broken
    }

    /// A segment the pruner deleted: stop writing to it (the next recording starts a new one).
    pub(super) fn forget(&mut self, path: &Path) {
        self.open.retain(|_, segment| segment.path != path);
    }
}

impl Segment {
    /// Creates `segment-<id>.jsonl` (0600) in the recording's date folder holding `first`,
    /// never replacing a file: a taken name gets `-1`, `-2`... appended. The first recording is
    /// written under a temporary name and the file linked to its name only then, so a segment
    /// is never seen empty (a process killed between creating and writing it left a 0-byte
    /// segment that `check` and `replay` refused).
    fn create(paths: &RecordingPaths, first: &[u8]) -> std::io::Result<Segment> {
        let name = paths.done.file_name().unwrap_or_default().to_string_lossy();
        let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
        let temp = paths.temp.with_file_name(format!(
            ".segment-{}",
            paths.temp.file_name().unwrap_or_default().to_string_lossy()
        ));
        let mut file = match create_temp(&temp) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                create_folder(&paths.folder)?;
                create_temp(&temp)?
            }
            other => other?,
        };
        let linked = file.write_all(first).and_then(|()| {
            let mut path = paths.folder.join(format!("segment-{stem}.jsonl"));
            for attempt in 1..=NAME_ATTEMPTS {
                match std::fs::hard_link(&temp, &path) {
                    Ok(()) => return Ok(path),
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                        path = paths.folder.join(format!("segment-{stem}-{attempt}.jsonl"));
                    }
                    Err(error) => return Err(error),
                }
            }
            Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} and its variants exist already", path.display()),
            ))
        });
        let _ = std::fs::remove_file(&temp);
        Ok(Segment {
            folder: paths.folder.clone(),
            path: linked?,
            out: BufWriter::with_capacity(BUFFER, file),
            written: first.len() as u64,
            opened: std::time::Instant::now(),
        })
    }

    fn close(mut self) -> std::io::Result<Closed> {
        self.out.flush()?;
        Ok(Closed {
            path: self.path,
            size: self.written,
        })
    }
}

/// A new temporary file, owner-only, never through a link; fails when the name is taken.
fn create_temp(path: &Path) -> std::io::Result<File> {
    super::layout::create_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn paths(root: &Path, id: &str, day: u64) -> RecordingPaths {
        let started = UNIX_EPOCH + Duration::from_secs(1_796_212_800 + day * 86_400);
        RecordingPaths::new(root, "default", started, id)
    }

    #[test]
    fn recordings_share_a_segment_until_it_is_full_or_the_day_changes() {
        let dir = crate::test_dir::TestDir::new("segments");
        let mut segments = Segments::new(10);
        let mut closed = Vec::new();
        let first = paths(&dir, "t-1", 0);
        segments
            .append(&first, b"aaaa\n", &mut closed)
            .expect("append");
        segments
            .append(&paths(&dir, "t-2", 0), b"bbbb\n", &mut closed)
            .expect("append");
        assert!(closed.is_empty(), "10 bytes fit: {closed:?}");
        // The third would pass 10 bytes: the first segment is closed, the next one named after
        // the recording that opens it.
        segments
            .append(&paths(&dir, "t-3", 0), b"cc\n", &mut closed)
            .expect("append");
        let first_segment = first.folder.join("segment-t-1.jsonl");
        assert_eq!(
            closed,
            vec![Closed {
                path: first_segment.clone(),
                size: 10
            }]
        );
        assert_eq!(
            std::fs::read(&first_segment).expect("read"),
            b"aaaa\nbbbb\n"
        );
        // The next day's recording closes the day's segment, though it is not full.
        let next_day = paths(&dir, "t-4", 1);
        segments
            .append(&next_day, b"dd\n", &mut closed)
            .expect("append");
        assert_eq!(closed.len(), 2);
        assert!(segments.flush().is_empty());
        let third = next_day.folder.join("segment-t-4.jsonl");
        assert_eq!(std::fs::read(&third).expect("read"), b"dd\n");
        // A recording larger than the bound still gets written, alone in its segment.
        segments
            .append(&paths(&dir, "t-5", 1), b"a long recording\n", &mut closed)
            .expect("append");
        assert_eq!(closed.len(), 3);
        assert!(segments.flush().is_empty());
        assert_eq!(
            std::fs::read(next_day.folder.join("segment-t-5.jsonl")).expect("read"),
            b"a long recording\n"
        );
    }

    #[test]
    fn a_taken_name_is_never_replaced_and_a_forgotten_segment_is_not_written_again() {
        let dir = crate::test_dir::TestDir::new("segments-names");
        let first = paths(&dir, "t-1", 0);
        create_folder(&first.folder).expect("folder");
        let taken = first.folder.join("segment-t-1.jsonl");
        std::fs::write(&taken, "someone else's").expect("write");
        let mut segments = Segments::new(1024);
        let mut closed = Vec::new();
        segments
            .append(&first, b"x\n", &mut closed)
            .expect("append");
        assert!(segments.flush().is_empty());
        assert_eq!(std::fs::read(&taken).expect("read"), b"someone else's");
        let variant = first.folder.join("segment-t-1-1.jsonl");
        assert_eq!(std::fs::read(&variant).expect("read"), b"x\n");
        segments.forget(&variant);
        segments
            .append(&paths(&dir, "t-2", 0), b"y\n", &mut closed)
            .expect("append");
        assert!(segments.flush().is_empty());
        assert_eq!(std::fs::read(&variant).expect("read"), b"x\n");
        assert_eq!(
            std::fs::read(first.folder.join("segment-t-2.jsonl")).expect("read"),
            b"y\n"
        );
    }

    #[test]
    fn every_cassette_shares_one_open_segment_however_many_names_come() {
        let dir = crate::test_dir::TestDir::new("segments-cassettes");
        let mut segments = Segments::new(1 << 20);
        let mut closed = Vec::new();
        for n in 0..200 {
            let paths = RecordingPaths::in_cassette(&dir, &format!("t_{n}.py::test"), "t-1");
            segments
                .append(&paths, b"x\n", &mut closed)
                .expect("append");
        }
        segments
            .append(&paths(&dir, "t-2", 0), b"y\n", &mut closed)
            .expect("append");
        // One open for the cassettes, one for the route: the 199 others were closed in turn.
        assert_eq!(segments.open.len(), 2);
        assert_eq!(closed.len(), 199);
        assert!(segments.flush().is_empty());
        let last = RecordingPaths::in_cassette(&dir, "t_199.py::test", "t-1");
        let written = std::fs::read(last.folder.join("segment-t-1.jsonl")).expect("read");
        assert_eq!(written, b"x\n");
    }
}

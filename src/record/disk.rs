//! The recorder's writer thread: the only code that touches recording files.
//!
//! Input: [`Msg`]s from [`crate::record::RecordingHandle`]s through a
//! [`WriterThread`](crate::writer_thread::WriterThread) whose budget is bytes (see `writer.rs`).
//! Output, in the `files` layout: one file per exchange, written to its temporary name through a
//! `BufWriter` and renamed into place at the end (or deleted, when the recording is not to be
//! kept), then pruning. In the `segments` layout a recording's lines are held in memory until
//! its end and then appended whole to its route's segment (`segment.rs`); one that outgrows
//! [`HELD_ONE`], or arrives while all held recordings together pass [`HELD_ALL`], moves to its
//! own file and goes on as in the `files` layout, so what is held stays bounded. Every I/O
//! error is counted (`tooltap_recording_failures_total{target="recordings"}`), logged at most
//! once a minute, and ends only the recording it hit; the thread carries on with the next one.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::config::RecordLayout;
use super::format::{EndLine, FrameData, FrameLine, Line, Meta};
use super::layout::{RecordingPaths, create_file, create_folder};
use super::prune::Pruner;
use super::segment::{Closed, Segments};
use super::store::upload::{Notifier, SEGMENT_AGE};
use crate::metrics::Metrics;
use crate::writer_thread::Drain;

/// How long the writer lets messages gather after a burst before it waits for the next one:
/// while it sleeps, senders find no waiting receiver and queue without a wake-up, so a busy
/// proxy wakes this thread at most once per `GATHER` instead of once per message (three or more
/// per exchange in `all` mode).
pub(super) const GATHER: Duration = Duration::from_millis(2);
/// Failures are logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(60);
/// What a message costs in the queue budget besides its payload.
pub(super) const MSG_OVERHEAD: usize = 128;
/// The serialisation buffer a large line grew is given back past this.
const KEPT_SCRATCH: usize = 64 * 1024;
/// In the `segments` layout, the most one recording's lines are held in memory before it moves
/// to its own file: a buffered exchange is a few KiB, a long stream is not held.
pub(super) const HELD_ONE: usize = 64 * 1024;
/// ... and the most all held recordings hold together.
pub(super) const HELD_ALL: usize = 8 * 1024 * 1024;
/// Metrics target of disk failures.
pub const FAILURE_TARGET: &str = "recordings";

/// What the writer thread receives. One `key` per recording; messages of a key arrive in order.
pub(super) enum Msg {
    Open {
        key: u64,
        paths: RecordingPaths,
        meta: Box<Meta>,
    },
    Frame {
        key: u64,
        seq: u64,
        t_us: u64,
        bytes: Bytes,
    },
    /// `end.frames`/`end.bytes` are filled in here, from what the file really holds.
    Finish {
        key: u64,
        end: Box<EndLine>,
        keep: bool,
    },
    /// Nothing to write: wakes the thread so that `idle` closes segments that reached their
    /// age (sent by the uploader, see `store::upload`).
    Tick,
}

impl Msg {
    /// The bytes this message holds against the queue budget.
    pub(super) fn cost(&self) -> usize {
        match self {
            Msg::Frame { bytes, .. } => bytes.len() + MSG_OVERHEAD,
            Msg::Open { .. } | Msg::Finish { .. } | Msg::Tick => MSG_OVERHEAD,
        }
    }
}

/// Where an open recording's lines go; flushing a held one is nothing to do.
enum Destination {
    File(BufWriter<File>),
    /// Held until the end, then appended to a segment.
    Held(Vec<u8>),
}

impl Destination {
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Destination::File(out) => out.flush(),
            Destination::Held(_) => Ok(()),
        }
    }
}

struct OpenRecording {
    paths: RecordingPaths,
    out: Destination,
    frames: u64,
    bytes: u64,
    written: u64,
    /// The length of what a reused file held before (see [`take_over`]): cut back to `written`
    /// at the end when longer.
    stale: u64,
}

pub(super) struct Disk {
    pub(super) metrics: Arc<Metrics>,
    pub(super) pruner: Pruner,
    /// `Some` in the `segments` layout.
    segments: Option<Segments>,
    /// What the held recordings hold together.
    held: usize,
    open: HashMap<u64, OpenRecording>,
    last_logged: Option<Instant>,
    failures_since_log: u64,
    /// Where each line is serialised before it is written (see [`write_line`]).
    scratch: Vec<u8>,
    /// When recording to object storage: told of each published recording and closed segment.
    upload: Option<Notifier>,
}

impl Drain for Disk {
    type Msg = Msg;

    fn take(&mut self, msg: Msg) {
        self.handle(msg);
    }

    /// Flushes every open file (unfinished recordings stay under their temporary names) and
    /// every segment.
    fn flush(&mut self) {
        let mut broken = Vec::new();
        for (key, recording) in &mut self.open {
            if let Err(error) = recording.out.flush() {
                broken.push((*key, error));
            }
        }
        for (key, error) in broken {
            self.abandon(key, &error);
        }
        self.idle();
        // Uploading: a flush (shutdown) hands every segment to the uploader now.
        if self.upload.is_some() {
            self.close_segments(Duration::ZERO);
        }
    }

    /// Writes out the segments' buffers, which hold only finished recordings: a recording is
    /// in its segment file once the burst that finished it is handled, not at the next explicit
    /// flush (a SIGKILL lost every recording since the last one, and left the segment empty).
    fn idle(&mut self) {
        let broken = self.segments.as_mut().map(Segments::flush);
        for (path, error) in broken.into_iter().flatten() {
            self.failed_at(&error, &path);
        }
        if self.upload.is_some() {
            self.close_segments(SEGMENT_AGE);
        }
    }
}

impl Disk {
    pub(super) fn new(
        metrics: Arc<Metrics>,
        pruner: Pruner,
        layout: RecordLayout,
        segment_bytes: u64,
        upload: Option<Notifier>,
    ) -> Disk {
        Disk {
            metrics,
            pruner,
            segments: (layout == RecordLayout::Segments).then(|| Segments::new(segment_bytes)),
            held: 0,
            open: HashMap::new(),
            last_logged: None,
            failures_since_log: 0,
            scratch: Vec::new(),
            upload,
        }
    }

    /// Closes the segments at least `age` old and hands them to the uploader.
    fn close_segments(&mut self, age: Duration) {
        let Some(segments) = self.segments.as_mut() else {
            return;
        };
        let mut closed = Vec::new();
        let broken = segments.close_older_than(age, &mut closed);
        for (path, error) in broken {
            self.failed_at(&error, &path);
        }
        if let Some(upload) = &self.upload {
            for Closed { path, size } in closed {
                upload.ready(path, size);
            }
        }
    }

    fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Open { key, paths, meta } if self.segments.is_some() => {
                let mut lines = Vec::new();
                push_line(&mut lines, &Line::Exchange(meta));
                self.held += lines.len();
                let recording = OpenRecording {
                    paths,
                    written: lines.len() as u64,
                    out: Destination::Held(lines),
                    frames: 0,
                    bytes: 0,
                    stale: 0,
                };
                self.open.insert(key, recording);
                self.move_out_if_over(key);
            }
            Msg::Open { key, paths, meta } => {
                let reused = self.reuse_oldest(&paths);
                match open(paths, meta, reused, &mut self.scratch) {
                    Ok(recording) => {
                        self.open.insert(key, recording);
                    }
                    Err((error, paths)) => self.failed(&error, &paths),
                }
            }
            Msg::Frame {
                key,
                seq,
                t_us,
                bytes,
            } => {
                let Some(recording) = self.open.get_mut(&key) else {
                    return; // its open failed, or an earlier write did: already counted
                };
                let line = Line::Frame(FrameLine {
                    seq,
                    t_us,
                    data: FrameData::from_bytes(&bytes),
                });
                match write_line(&mut recording.out, &line, &mut self.scratch) {
                    Ok(written) => {
                        recording.frames += 1;
                        recording.bytes += bytes.len() as u64;
                        recording.written += written;
                        if matches!(recording.out, Destination::Held(_)) {
                            self.held += written as usize;
                            self.move_out_if_over(key);
                        }
                    }
                    Err(error) => self.abandon(key, &error),
                }
            }
            Msg::Finish { key, end, keep } => self.finish(key, end, keep),
            Msg::Tick => {}
        }
    }

    /// When the new recording would put the folder over a limit, the oldest recording is pruned
    /// now and its file, renamed to the new one's temporary name, becomes the new recording's
    /// file, overwritten and cut to length at the end (see [`take_over`]); when that is not
    /// possible it is deleted, as at the end of a recording.
    fn reuse_oldest(&mut self, paths: &RecordingPaths) -> Option<(File, u64)> {
        let oldest = self.pruner.take_for_reuse(self.open.len())?;
        let file = take_over(&oldest.path, paths);
        if file.is_some() || std::fs::remove_file(&oldest.path).is_ok() {
            self.count_pruned(&oldest.path);
        }
        self.pruner.left(&oldest);
        file
    }

    fn count_pruned(&self, path: &std::path::Path) {
        self.metrics.limit_hit("recordings_pruned", "recordings");
        tracing::debug!(path = %path.display(), "recording pruned");
    }

    /// A held recording that outgrew [`HELD_ONE`], or any held recording while all of them
    /// pass [`HELD_ALL`], moves to its own file (the `files` layout's path, temporary name
    /// first), so the writer's memory stays bounded however long a stream runs.
    fn move_out_if_over(&mut self, key: u64) {
        let Some(recording) = self.open.get_mut(&key) else {
            return;
        };
        let Destination::Held(lines) = &mut recording.out else {
            return;
        };
        if lines.len() <= HELD_ONE && self.held <= HELD_ALL {
            return;
        }
        let lines = std::mem::take(lines);
        self.held -= lines.len();
        self.metrics.limit_hit("segment_hold", "recordings");
        let moved = create_recording_file(&recording.paths).and_then(|file| {
            let mut out = BufWriter::with_capacity(64 * 1024, file);
            out.write_all(&lines)?;
            Ok(out)
        });
        match moved {
            Ok(out) => recording.out = Destination::File(out),
            Err(error) => self.abandon(key, &error),
        }
    }

    fn finish(&mut self, key: u64, mut end: Box<EndLine>, keep: bool) {
        let Some(mut recording) = self.open.remove(&key) else {
            return;
        };
        if let Destination::Held(lines) = &recording.out {
            self.held -= lines.len();
        }
        if !keep {
            if let Destination::File(out) = recording.out {
                drop(out);
                let _ = std::fs::remove_file(&recording.paths.temp);
            }
            return;
        }
        end.frames = recording.frames;
        end.bytes = recording.bytes;
        if let Destination::Held(lines) = &mut recording.out {
            push_line(lines, &Line::End(end));
            self.append_to_segment(&recording.paths, lines);
            return;
        }
        let finished = write_line(&mut recording.out, &Line::End(end), &mut self.scratch)
            .and_then(|written| {
                recording.written += written;
                recording.out.flush()
            })
            .and_then(|()| {
                if let Destination::File(out) = &recording.out
                    && recording.stale > recording.written
                {
                    out.get_ref().set_len(recording.written)?;
                }
                Ok(())
            })
            .and_then(|()| publish(&recording.paths.temp, &recording.paths.done));
        match finished {
            Ok(published) => {
                if let Some(upload) = &self.upload {
                    upload.ready(published.clone(), recording.written);
                }
                for deleted in self.pruner.added(published, recording.written) {
                    self.count_pruned(&deleted);
                }
            }
            Err(error) => {
                let _ = std::fs::remove_file(&recording.paths.temp);
                self.failed(&error, &recording.paths);
            }
        }
    }

    /// Appends a finished held recording to its segment; segments closed on the way go to the
    /// pruner, and a segment the pruner deletes is written no more.
    fn append_to_segment(&mut self, paths: &RecordingPaths, lines: &[u8]) {
        let Some(segments) = self.segments.as_mut() else {
            return;
        };
        let mut closed = Vec::new();
        let appended = segments.append(paths, lines, &mut closed);
        for Closed { path, size } in closed {
            if let Some(upload) = &self.upload {
                upload.ready(path.clone(), size);
            }
            for deleted in self.pruner.added_segment(path, size) {
                if let Some(segments) = self.segments.as_mut() {
                    segments.forget(&deleted);
                }
                self.count_pruned(&deleted);
            }
        }
        if let Err(error) = appended {
            self.failed(&error, paths);
        }
    }

    /// A write failed mid-recording: drop what was written and count it.
    fn abandon(&mut self, key: u64, error: &std::io::Error) {
        if let Some(recording) = self.open.remove(&key) {
            match recording.out {
                Destination::File(out) => {
                    drop(out);
                    let _ = std::fs::remove_file(&recording.paths.temp);
                }
                Destination::Held(lines) => self.held -= lines.len(),
            }
            self.failed(error, &recording.paths);
        }
    }

    fn failed(&mut self, error: &std::io::Error, paths: &RecordingPaths) {
        self.failed_at(error, &paths.temp);
    }

    fn failed_at(&mut self, error: &std::io::Error, path: &std::path::Path) {
        self.metrics.recording_failure(FAILURE_TARGET);
        self.failures_since_log += 1;
        if self.last_logged.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
            self.last_logged = Some(Instant::now());
            tracing::error!(
                path = %path.display(),
                %error,
                failures = self.failures_since_log,
                "cannot write a recording; traffic is unaffected (logged at most once a minute)"
            );
            self.failures_since_log = 0;
        }
    }
}

fn open(
    paths: RecordingPaths,
    meta: Box<Meta>,
    reused: Option<(File, u64)>,
    scratch: &mut Vec<u8>,
) -> Result<OpenRecording, (std::io::Error, RecordingPaths)> {
    let stale = reused.as_ref().map_or(0, |(_, stale)| *stale);
    let opened = match reused {
        Some((file, _)) => Ok(file),
        None => create_recording_file(&paths),
    };
    let file = match opened {
        Ok(file) => file,
        Err(error) => return Err((error, paths)),
    };
    let mut out = Destination::File(BufWriter::with_capacity(64 * 1024, file));
    match write_line(&mut out, &Line::Exchange(meta), scratch) {
        Ok(written) => Ok(OpenRecording {
            paths,
            out,
            frames: 0,
            bytes: 0,
            written,
            stale,
        }),
        Err(error) => {
            let _ = std::fs::remove_file(&paths.temp);
            Err((error, paths))
        }
    }
}

/// Creates a recording's file under its temporary name. The file is tried first: its folder
/// exists for every recording but the first of a day, and a mkdir per recording showed up in
/// the benchmark's syscall counts.
fn create_recording_file(paths: &RecordingPaths) -> std::io::Result<File> {
    match create_file(&paths.temp) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            create_folder(&paths.folder).and_then(|()| create_file(&paths.temp))
        }
        other => other,
    }
}

/// Makes a pruned recording's file the new recording's: renamed to `paths.temp`, so its inode is
/// reused; returns it with its current length. At the file limit of `--record all` on ext4,
/// creating a file per recording while deleting the oldest one costs much of tooltap's CPU in
/// the kernel's inode allocator walking past recently deleted inodes. The file is overwritten
/// from the start and cut to its new length at the end, never emptied first: ext4 writes a
/// file emptied by a truncation to zero back to disk when it is closed (`auto_da_alloc`; see
/// docs/benchmarks.md#record-inode-reuse for both costs). `None` (the caller then deletes
/// `old`) when the file is gone, is not a plain file, or has another name (a hard link someone
/// made to keep it: overwriting it would overwrite theirs).
#[cfg(unix)]
fn take_over(old: &std::path::Path, paths: &RecordingPaths) -> Option<(File, u64)> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let file = std::fs::OpenOptions::new().write(true).open(old).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.nlink() != 1 {
        return None;
    }
    if meta.mode() & 0o777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .ok()?;
    }
    let renamed = std::fs::rename(old, &paths.temp).or_else(|error| {
        if error.kind() != std::io::ErrorKind::NotFound {
            return Err(error);
        }
        create_folder(&paths.folder)?;
        std::fs::rename(old, &paths.temp)
    });
    renamed.ok()?;
    // Locked like a new temporary file: the start-up sweep leaves a live process's alone.
    let _ = file.try_lock();
    Some((file, meta.len()))
}

/// Without hard-link counts a file cannot be known to be ours alone: never reused.
#[cfg(not(unix))]
fn take_over(_old: &std::path::Path, _paths: &RecordingPaths) -> Option<(File, u64)> {
    None
}

/// Writes one line and its newline; returns the bytes written. Serialised into `scratch` first
/// (measured, serialising straight into the `BufWriter` through a counting adapter cost more, as
/// serde_json writes many tiny pieces), a buffer kept between lines: a fresh `Vec` per line is
/// regrown four or five times per exchange (see docs/benchmarks.md#record-line-scratch).
fn write_line(out: &mut Destination, line: &Line, scratch: &mut Vec<u8>) -> std::io::Result<u64> {
    let out = match out {
        Destination::File(out) => out,
        Destination::Held(lines) => return Ok(push_line(lines, line)),
    };
    scratch.clear();
    serde_json::to_writer(&mut *scratch, line).map_err(std::io::Error::other)?;
    scratch.push(b'\n');
    let written = out.write_all(scratch).map(|()| scratch.len() as u64);
    if scratch.capacity() > KEPT_SCRATCH {
        *scratch = Vec::new();
    }
    written
}

/// Serialises one line and its newline onto a held recording; returns the bytes added. A line
/// that does not serialise (it cannot: every field is a string, number or JSON value) adds
/// nothing.
fn push_line(lines: &mut Vec<u8>, line: &Line) -> u64 {
    let before = lines.len();
    if serde_json::to_writer(&mut *lines, line).is_err() {
        lines.truncate(before);
        return 0;
    }
    lines.push(b'\n');
    (lines.len() - before) as u64
}

/// Moves a finished recording to its name without ever replacing another file: a hard link
/// fails when the name is taken (another process writing into a shared folder), and the next
/// free `<name>-N.jsonl` is taken instead. The temporary name is removed only once the
/// recording has its own.
fn publish(temp: &std::path::Path, done: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let mut target = done.to_path_buf();
    for attempt in 1..=16 {
        match std::fs::hard_link(temp, &target) {
            Ok(()) => return std::fs::remove_file(temp).map(|()| target),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                let stem = done.file_stem().unwrap_or_default().to_string_lossy();
                target = done.with_file_name(format!("{stem}-{attempt}.jsonl"));
            }
            Err(error) => return Err(error),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{} and 16 variants of it exist already", done.display()),
    ))
}

#[cfg(test)]
mod publish_tests {
    use super::publish;

    #[test]
    fn a_taken_name_is_never_replaced() {
        let dir = crate::test_dir::TestDir::new("publish");
        let done = dir.join("x.jsonl");
        std::fs::write(&done, "first").expect("write");
        let temp = dir.join(".x.tmp");
        std::fs::write(&temp, "second").expect("write");
        let published = publish(&temp, &done).expect("published");
        assert_eq!(published, dir.join("x-1.jsonl"));
        assert_eq!(std::fs::read_to_string(&done).expect("read"), "first");
        assert_eq!(
            std::fs::read_to_string(dir.join("x-1.jsonl")).expect("read"),
            "second"
        );
        assert!(!temp.exists());
    }
}

//! Where a recording lives on disk and how its files and folders are created.
//!
//! Input: the route name, the exchange id and start time from the recorder. Output: the
//! `<dir>/<route>/<yyyy-mm-dd>/<id>.jsonl` path (`<dir>/<cassette folder>/<id>.jsonl` for a request
//! that named a cassette, see [`super::cassette`]), its temporary sibling `.<id>~<random>.jsonl.tmp`
//! (which `tooltap check` never picks up: it is hidden and does not end in `.jsonl`; the random
//! part, drawn once per process, makes the name unguessable), and owner-only files (0600) and
//! folders (0700). Path segments come from the route and the id only, each reduced to
//! `[A-Za-z0-9._-]`, so no request data can steer a path. Temporary files are created new
//! (`O_EXCL`) and never through a symbolic link (`O_NOFOLLOW`), and locked (`flock`) while
//! their process lives, so a start-up sweep (`record::sweep`) can tell a dead process's.

use std::fs::{DirBuilder, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Longest path segment kept from a route name or an id.
const MAX_SEGMENT: usize = 96;
/// The suffix of an unfinished recording.
pub const TEMP_SUFFIX: &str = ".jsonl.tmp";
/// Between the id and the per-process random part of a temporary name: never in a path segment
/// (see [`segment`]), so a name holding it is this version's.
pub const TEMP_RANDOM_MARK: char = '~';

/// The final and temporary paths of one recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingPaths {
    pub folder: PathBuf,
    pub temp: PathBuf,
    pub done: PathBuf,
    /// Which open segment it may append to (`record.layout = "segments"`): its route's folder,
    /// or, for every cassette, the recordings folder itself, so the open segments stay one per
    /// route and one for cassettes, however many cassette names traffic brings.
    pub segment_slot: PathBuf,
}

impl RecordingPaths {
    pub fn new(root: &Path, route: &str, started: SystemTime, id: &str) -> RecordingPaths {
        let route = root.join(segment(route));
        RecordingPaths::in_folder(route.join(utc_date(started)), route, id)
    }

    /// The paths of a recording whose request named a cassette: `<dir>/<cassette folder>/<id>.jsonl`
    /// (see [`super::cassette::folder`]), so a test's recordings sit together under its name.
    pub fn in_cassette(root: &Path, cassette: &str, id: &str) -> RecordingPaths {
        let folder = root.join(super::cassette::folder(cassette));
        RecordingPaths::in_folder(folder, root.to_path_buf(), id)
    }

    fn in_folder(folder: PathBuf, segment_slot: PathBuf, id: &str) -> RecordingPaths {
        let id = segment(id);
        RecordingPaths {
            segment_slot,
            temp: folder.join(format!(
                ".{id}{TEMP_RANDOM_MARK}{}{TEMP_SUFFIX}",
                process_random()
            )),
            done: folder.join(format!("{id}.jsonl")),
            folder,
        }
    }
}

/// A safe single path segment: other characters become `_`, no leading dot, never empty.
pub fn segment(text: &str) -> String {
    // Route names and ids are nearly always safe already: then one copy, no per-char work.
    if !text.is_empty()
        && text.len() <= MAX_SEGMENT
        && !text.starts_with('.')
        && text.bytes().all(safe_byte)
    {
        return text.to_string();
    }
    let mut clean: String = text
        .chars()
        .take(MAX_SEGMENT)
        .map(|c| {
            if c.is_ascii() && safe_byte(c as u8) {
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

/// A byte kept as it is in a path segment.
fn safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'
}

/// `yyyy-mm-dd` in UTC (1970-01-01 for a time before it). Computed from the day number (the
/// proleptic Gregorian calendar, as RFC 3339 has it) rather than through a formatted RFC 3339
/// string: this runs for every recording.
pub fn utc_date(time: SystemTime) -> String {
    let days = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() / 86_400);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Year, month and day of the `days`-th day after 1970-01-01: the days are counted in 400-year
/// eras of 146,097 days whose years start on March 1st, so February's length only matters at
/// the end of a year.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Sixteen hex digits drawn once per process from std's `RandomState` (keyed from the OS's
/// randomness), the pid mixed in.
pub(crate) fn process_random() -> &'static str {
    static RANDOM: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RANDOM.get_or_init(|| {
        use std::hash::BuildHasher;
        let drawn = std::hash::RandomState::new().hash_one(std::process::id());
        format!("{drawn:016x}")
    })
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
    let probe = folder.join(format!(
        ".tooltap-probe-{}-{}",
        std::process::id(),
        process_random()
    ));
    create_file(&probe)?;
    std::fs::remove_file(&probe)
}

/// Creates a new file readable and writable by its owner only: never one that exists, never
/// through a symbolic link planted at the name (both fail). The file is locked (`flock`,
/// exclusive) for as long as it is open, which tells [`crate::record`]'s start-up sweep that its
/// process lives; a file system without locks leaves it unlocked, and the sweep then keeps it.
pub fn create_file(path: &Path) -> std::io::Result<File> {
    let mut options = owner_only();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let file = options.open(path)?;
    let _ = file.try_lock();
    Ok(file)
}

/// Open options whose new file is readable and writable by its owner only (0600): every file
/// tooltap writes (recordings, segments, the violations file) is made through these.
pub fn owner_only() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
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
        let temp = paths.temp.to_string_lossy().into_owned();
        let random = temp
            .strip_prefix("/r/_._etc/2026-12-02/.t1-7_.._x~")
            .and_then(|rest| rest.strip_suffix(".jsonl.tmp"))
            .expect("the temporary name is the id, a mark and a random part");
        assert_eq!(random.len(), 16);
        assert!(random.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(is_recording(&paths.done));
        assert!(!is_recording(&paths.temp));
        assert!(!is_recording(Path::new("/r/violations.jsonl")));
        assert_eq!(segment(""), "_");
        assert_eq!(segment("a b/c"), "a_b_c");
        assert_eq!(segment("plain-id_1.x"), "plain-id_1.x");
        assert_eq!(segment(".hidden"), "_hidden");
        assert_eq!(segment("é/x"), "__x", "one `_` per character, not per byte");
        assert_eq!(segment(&"a".repeat(200)).len(), MAX_SEGMENT);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_or_a_file_planted_at_a_temporary_name_is_never_followed_nor_emptied() {
        let dir = crate::test_dir::TestDir::new("planted");
        let target = dir.join("precious");
        std::fs::write(&target, "keep").expect("write");
        let link = dir.join(".t1-1~0123456789abcdef.jsonl.tmp");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(create_file(&link).is_err(), "a link at the name is refused");
        let dangling = dir.join(".t1-2~0123456789abcdef.jsonl.tmp");
        std::os::unix::fs::symlink(dir.join("new"), &dangling).expect("symlink");
        assert!(create_file(&dangling).is_err(), "a dangling link too");
        assert!(!dir.join("new").exists(), "nothing created through it");
        let planted = dir.join(".t1-3~0123456789abcdef.jsonl.tmp");
        std::fs::write(&planted, "theirs").expect("write");
        assert!(
            create_file(&planted).is_err(),
            "an existing file is refused"
        );
        assert_eq!(std::fs::read_to_string(&planted).expect("read"), "theirs");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep");
        // Two processes' names for one exchange differ: the random part is not the id's.
        let started = UNIX_EPOCH + Duration::from_secs(1_796_212_800);
        let paths = RecordingPaths::new(&dir, "r", started, "t1-4");
        assert!(!paths.temp.to_string_lossy().contains(".t1-4.jsonl.tmp"));
    }

    #[test]
    fn the_date_is_the_rfc3339_date_for_any_day() {
        // Every day from 1970 to 2200, at a moment late in the day, against humantime's RFC 3339.
        for day in 0..84_000u64 {
            let time = UNIX_EPOCH + Duration::from_secs(day * 86_400 + 86_399);
            let rfc = humantime::format_rfc3339_seconds(time).to_string();
            assert_eq!(utc_date(time), rfc[..10], "day {day}");
        }
        assert_eq!(utc_date(UNIX_EPOCH - Duration::from_secs(5)), "1970-01-01");
    }
}

//! The recordings a replay server answers from, indexed by [`MatchKey`], served in turn.
//!
//! Input: a directory of `*.jsonl` recordings (read recursively at start-up with
//! [`crate::interop::files::read_all_bounded`], so a segment file gives all of its recordings, each
//! named `<file>#<id>`; one unreadable recording stops the start, naming the file and the line,
//! because a fixture suite that silently lost a fixture is worse than one that refuses to start)
//! and the [`MatchRules`]. Output: for each request, the next recording under its key, or
//! a [`Miss`] naming the two closest recordings and the JSON pointers where the bodies differ.
//!
//! Several recordings with one key are served in turn, in natural file-name order
//! (`call-2.jsonl` before `call-10.jsonl`), cycling: the third request for a key with two
//! recordings gets the first again. Cycling (not exhausting) keeps a long-lived replay server
//! usable by a suite that runs twice; the `x-tooltap-recording` header says which file answered.
//!
//! A request that names a cassette (`x-tooltap-cassette`, see [`crate::record::cassette`]) is
//! matched against that cassette's recordings only — those whose recorded request named it, or,
//! when none did, the interactions of a vcrpy cassette without the header at the path
//! pytest-recording gives that test (`test_weather/test_loop.yaml` for
//! `tests/test_weather.py::test_loop`) — with turns of their own; a request that names none is
//! matched against every recording.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::body::ReplayEnding;
use super::matching::tool_call_ids::canonicalize;
use super::matching::{Difference, MatchKey, MatchRules, ToolCallIds, compare};
use crate::interop::files::read_all_bounded;
use crate::record::served::served_frames;
use crate::record::{Outcome, ReadError, RecordedFrame, Recording};

/// One loaded recording and what it is matched on.
#[derive(Debug)]
pub struct Entry {
    /// The file's path relative to the recordings directory, with `/` separators; `#<id>` after
    /// it for a recording in a segment file.
    pub name: String,
    pub recording: Recording,
    /// The recording's frames, shared with every response that replays them.
    pub frames: Arc<[RecordedFrame]>,
    /// `UpstreamBroke` when the recorded upstream broke off mid-body.
    pub ending: ReplayEnding,
    pub key: MatchKey,
    /// The cassette its recorded request named, if any.
    pub cassette: Option<Arc<str>>,
    /// The request body after ignoring, for the miss diagnosis; `None` when not JSON.
    normalized: Option<Value>,
    /// How many requests it answered.
    hits: AtomicU64,
    /// Made from a forwarded miss while serving (`--on-miss forward`): never reported unused.
    captured: bool,
}

/// Why the recordings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Complete on its own (no `source()`), so a printed chain does not repeat the cause.
    #[error("recordings directory {}: {cause}", path.display())]
    Walk {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// A request no recording answers, and the nearest things there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// The closest recordings, closest first: at most [`CANDIDATES`]; none when the library is
    /// empty.
    pub candidates: Vec<Candidate>,
    /// `--ignore` patterns with `*` for the array indexes, each covering two or more of the
    /// closest recording's differing pointers.
    pub wildcards: Vec<String>,
    /// The closest recording would match with `--match-tool-call-ids loose`.
    pub loose_ids_would_match: bool,
    /// The cassette the request named, if any.
    pub cassette: Option<String>,
    /// The named cassette has no recordings at all: the candidates are other cassettes'.
    pub cassette_empty: bool,
}

/// One recording near a missed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    /// What differs: `method`/`path` mismatches, then body JSON pointers (the first
    /// [`MAX_KEPT`](super::matching::diff::MAX_KEPT) of them).
    pub differing: Vec<String>,
    /// How many differences there are in all, including those not kept.
    pub total: usize,
}

/// How many recordings a miss names.
pub const CANDIDATES: usize = 2;

mod usage;
pub use usage::{CassetteUsage, MAX_UNKNOWN_CASSETTES, Usage};

impl Miss {
    /// The closest recording's name, if there is any recording at all.
    pub fn closest(&self) -> Option<&str> {
        self.candidates.first().map(|c| c.name.as_str())
    }
}

/// A request as the replay server received it, for [`Library::next_for_sent`].
#[derive(Debug, Clone, Copy)]
pub struct Sent<'a> {
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// The query as sent, credentials and all.
    pub query: Option<&'a str>,
    pub body: &'a [u8],
    /// The body as the recorder would have redacted it, when that differs.
    pub as_recorded: Option<&'a [u8]>,
    /// The cassette the request named (`x-tooltap-cassette`): only its recordings answer.
    pub cassette: Option<&'a str>,
}

/// The recordings, indexed.
#[derive(Debug)]
pub struct Library {
    rules: MatchRules,
    entries: Vec<Entry>,
    /// Every recording, for requests that name no cassette.
    turns: HashMap<MatchKey, Turns>,
    /// Each cassette's own recordings and turns.
    cassettes: HashMap<Arc<str>, Cassette>,
    /// vcrpy cassettes whose interactions name no cassette, by the file pytest-recording writes
    /// for a test (`test_weather/test_loop`, see [`pytest_recording_file`]): a test's
    /// recordings when it has none of its own.
    files: HashMap<String, Cassette>,
    /// Misses of requests that named no cassette.
    unscoped_misses: AtomicU64,
    /// Misses of requests naming a cassette no recording belongs to (bounded).
    unknown: Mutex<usage::UnknownCassettes>,
}

/// One cassette's recordings (indexes into `entries`) and their turns.
#[derive(Debug, Default)]
struct Cassette {
    entries: Vec<usize>,
    turns: HashMap<MatchKey, Turns>,
    misses: AtomicU64,
}

/// The recordings under one key, and whose turn is next.
#[derive(Debug, Default)]
struct Turns {
    entries: Vec<usize>,
    next: AtomicUsize,
}

impl Library {
    /// Read every `*.jsonl` under `dir` (hidden directories skipped).
    pub fn load(dir: &Path, rules: MatchRules) -> Result<Library, LoadError> {
        let mut files = Vec::new();
        walk(dir, &mut files)?;
        let mut named: Vec<(String, PathBuf)> = files
            .into_iter()
            .map(|path| (relative_name(dir, &path), path))
            .collect();
        named.sort_by(|a, b| natural_cmp(&a.0, &b.0));
        let mut library = Library::empty(rules);
        let mut buffer = Vec::new();
        for (name, path) in named {
            let recordings = read_all_bounded(&path, u64::MAX, &mut buffer);
            if recordings.is_empty() {
                tracing::warn!(
                    path = %path.display(),
                    "a segment with no whole recording (tooltap stopped as it began writing \
                     it): skipped"
                );
            }
            // A segment holds many recordings: each is named `<file>#<id>`, in file order.
            let segment = recordings.len() > 1;
            for recording in recordings {
                let recording = recording?;
                let name = if segment {
                    format!("{name}#{}", recording.meta.id)
                } else {
                    name.clone()
                };
                library.insert(name, recording);
            }
        }
        Ok(library)
    }

    pub fn empty(rules: MatchRules) -> Library {
        Library {
            rules,
            entries: Vec::new(),
            turns: HashMap::new(),
            cassettes: HashMap::new(),
            files: HashMap::new(),
            unscoped_misses: AtomicU64::new(0),
            unknown: Mutex::default(),
        }
    }

    /// Add a recording; it takes its turn after those already under its key.
    pub fn insert(&mut self, name: String, recording: Recording) {
        self.insert_as(name, recording, false);
    }

    /// [`Library::insert`] for an exchange captured while serving (a forwarded miss), which
    /// the usage report never counts as unused.
    pub fn insert_captured(&mut self, name: String, recording: Recording) {
        self.insert_as(name, recording, true);
    }

    fn insert_as(&mut self, name: String, recording: Recording, captured: bool) {
        let body = recording.meta.request.body.bytes();
        let meta = &recording.meta;
        let key = self.rules.key_with_query(
            &meta.method,
            &meta.path,
            meta.query.as_deref(),
            body.as_deref(),
        );
        let normalized = body.as_deref().and_then(|b| self.rules.normalize(b));
        let index = self.entries.len();
        self.turns
            .entry(key.clone())
            .or_default()
            .entries
            .push(index);
        let cassette = crate::record::cassette::of_recorded(&meta.request.headers)
            .map(|name| Arc::<str>::from(name.as_str()));
        match &cassette {
            Some(name) => self
                .cassettes
                .entry(name.clone())
                .or_default()
                .add(index, &key),
            None => {
                if let Some(file) = pytest_recording_file(&name) {
                    self.files.entry(file).or_default().add(index, &key);
                }
            }
        }
        let ending = ending_of(&name, &recording);
        let mut recording = recording;
        let frames = served_frames(&mut recording);
        self.entries.push(Entry {
            name,
            ending,
            frames,
            recording,
            key,
            cassette,
            normalized,
            hits: AtomicU64::new(0),
            captured,
        });
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn rules(&self) -> &MatchRules {
        &self.rules
    }

    /// Starts turns over, as between two tests that replay one cassette: that cassette's, or
    /// every turn (cassettes' and unscoped) when `None`. Returns how many recordings it covered
    /// (0 for a cassette without recordings).
    pub fn reset(&self, cassette: Option<&str>) -> usize {
        let reset = |turns: &HashMap<MatchKey, Turns>| {
            turns
                .values()
                .map(|turns| {
                    turns.next.store(0, AtomicOrdering::Relaxed);
                    turns.entries.len()
                })
                .sum()
        };
        match cassette {
            None => {
                self.cassettes
                    .values()
                    .chain(self.files.values())
                    .for_each(|c| {
                        reset(&c.turns);
                    });
                reset(&self.turns)
            }
            Some(name) => self.cassette(name).map_or(0, |c| reset(&c.turns)),
        }
    }

    /// A cassette's recordings: those whose recorded request named it, else those of the vcrpy
    /// cassette file pytest-recording would have written for it.
    fn cassette(&self, name: &str) -> Option<&Cassette> {
        self.cassettes.get(name).or_else(|| {
            if self.files.is_empty() {
                return None;
            }
            let file = crate::interop::export::cassette_file(name);
            self.files.get(file.to_string_lossy().as_ref())
        })
    }

    /// The recording whose turn it is for this request, or why there is none.
    pub fn next_for(&self, method: &str, path: &str, body: &[u8]) -> Result<&Entry, Miss> {
        self.next_for_sent(Sent {
            method,
            path,
            query: None,
            body,
            as_recorded: None,
            cassette: None,
        })
    }

    /// [`Library::next_for`] for a request as sent, query included (its credentials are left
    /// out of matching, see [`super::matching::query_key`]), whose body the recorder may have
    /// redacted: `as_recorded` is that body with its credential-named fields redacted (see
    /// `Redactor::as_recorded`). A recording keeps `[REDACTED]` where the request had the real
    /// value, so the body as sent finds a recording made with redaction off for that field, and
    /// the body as recorded finds one made with it on; a miss is explained against the latter.
    pub fn next_for_sent(&self, sent: Sent<'_>) -> Result<&Entry, Miss> {
        let Sent {
            method,
            path,
            query,
            body,
            as_recorded,
            cassette,
        } = sent;
        // A named cassette's own turns; an unknown one has none (every request misses).
        let scope = cassette.map(|name| self.cassette(name));
        let (all_turns, among) = match scope {
            None => (Some(&self.turns), None),
            Some(found) => (
                found.map(|c| &c.turns),
                Some(found.map(|c| c.entries.as_slice())),
            ),
        };
        let key = |body| self.rules.key_with_query(method, path, query, body);
        let keys: Vec<MatchKey> = std::iter::once(body)
            .chain(as_recorded)
            .map(|body| key(Some(body)))
            .chain(std::iter::once(key(None)))
            .collect();
        let turns = keys.iter().find_map(|key| {
            all_turns?
                .get(key)
                .filter(|turns| !turns.entries.is_empty())
        });
        match turns {
            Some(turns) => {
                let turn = turns.next.fetch_add(1, AtomicOrdering::Relaxed);
                let entry = &self.entries[turns.entries[turn % turns.entries.len()]];
                entry.hits.fetch_add(1, AtomicOrdering::Relaxed);
                Ok(entry)
            }
            None => {
                // Counted by the request's name, unless its recordings carry that name.
                let named = cassette.and_then(|name| self.cassettes.get(name));
                self.count_miss(cassette, named);
                let body = as_recorded.unwrap_or(body);
                // An empty cassette is explained by the nearest recordings of any other.
                let among = among.flatten().filter(|among| !among.is_empty());
                let mut miss = self.closest(&key(Some(body)), body, among);
                miss.cassette = cassette.map(str::to_owned);
                miss.cassette_empty = cassette.is_some() && among.is_none();
                Err(miss)
            }
        }
    }

    /// The recordings nearest the request, nearest first: a different method or path weighs
    /// more than any body difference; then fewer arrays of another length (a recording of an
    /// earlier turn of the same conversation is a prefix, not a near miss); then fewer
    /// differing leaves; then the name. `among`: only these entries (a cassette's); all when
    /// `None`.
    fn closest(&self, key: &MatchKey, body: &[u8], among: Option<&[usize]>) -> Miss {
        let sent = self.rules.normalize(body);
        let entries: Box<dyn Iterator<Item = &Entry>> = match among {
            Some(among) => Box::new(among.iter().map(|&index| &self.entries[index])),
            None => Box::new(self.entries.iter()),
        };
        let mut ranked: Vec<Ranked> = entries
            .map(|entry| {
                let head = head_differences(&entry.key, key);
                let body = match (&entry.normalized, &sent) {
                    (Some(recorded), Some(sent)) => compare(recorded, sent),
                    _ if entry.key.body == key.body => Difference::default(),
                    _ => Difference {
                        pointers: vec!["(body is not JSON)".to_owned()],
                        total: 1,
                        leaves: 1,
                        length_mismatches: 0,
                    },
                };
                let rank = (head.len(), body.length_mismatches, body.leaves);
                (rank, entry, head, body)
            })
            .collect();
        ranked.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| natural_cmp(&a.1.name, &b.1.name))
        });
        let (wildcards, loose_ids_would_match) = match ranked.first() {
            Some((_, entry, head, body)) if head.is_empty() => (
                super::matching::diff::wildcard_suggestions(&body.pointers),
                self.loose_ids_would_match(entry, sent.as_ref()),
            ),
            _ => (Vec::new(), false),
        };
        let candidates = ranked
            .into_iter()
            .take(CANDIDATES)
            .map(|(_, entry, mut head, body)| {
                let total = head.len() + body.total;
                head.extend(body.pointers);
                Candidate {
                    name: entry.name.clone(),
                    differing: head,
                    total,
                }
            })
            .collect();
        Miss {
            candidates,
            wildcards,
            loose_ids_would_match,
            cassette: None,
            cassette_empty: false,
        }
    }

    /// Whether renaming tool-call ids would make `entry` answer `sent` (when they are strict).
    fn loose_ids_would_match(&self, entry: &Entry, sent: Option<&Value>) -> bool {
        let (Some(recorded), Some(sent)) = (&entry.normalized, sent) else {
            return false;
        };
        if self.rules.tool_call_ids == ToolCallIds::Loose {
            return false;
        }
        let (mut recorded, mut sent) = (recorded.clone(), sent.clone());
        canonicalize(&mut recorded);
        canonicalize(&mut sent);
        recorded == sent
    }
}

/// A recording's distance from a missed request: (head differences, arrays of another length,
/// differing leaves), then the recording, its head differences and its body difference.
type Ranked<'a> = ((usize, usize, usize), &'a Entry, Vec<String>, Difference);

impl Cassette {
    fn add(&mut self, index: usize, key: &MatchKey) {
        self.entries.push(index);
        self.turns
            .entry(key.clone())
            .or_default()
            .entries
            .push(index);
    }
}

/// The test a vcrpy cassette file is for, in pytest-recording's layout relative to the
/// recordings folder: `test_weather/test_loop.yaml#<id>` → `test_weather/test_loop` (see
/// [`crate::interop::export::cassette_file`]); `None` for any other file.
fn pytest_recording_file(name: &str) -> Option<String> {
    let file = name.split_once('#').map_or(name, |(file, _id)| file);
    [".yaml.gz", ".yaml", ".yml"]
        .iter()
        .find_map(|extension| file.strip_suffix(extension))
        .map(str::to_owned)
}

/// How a recording's body ends when replayed; recordings that are not whole are served as
/// they are, with a warning, because a fixture suite may hold them on purpose.
fn ending_of(name: &str, recording: &Recording) -> ReplayEnding {
    let outcome = recording.end.as_ref().map(|end| end.outcome);
    match outcome {
        Some(Outcome::Complete) => ReplayEnding::Complete,
        Some(Outcome::UpstreamBroke) => ReplayEnding::UpstreamBroke,
        // What the client got is served: the error in place of the cut (see `record::served`).
        Some(Outcome::Enforced) => ReplayEnding::Complete,
        Some(other @ (Outcome::ReaderGone | Outcome::Lossy | Outcome::FramesLost)) => {
            tracing::warn!(
                recording = name,
                outcome = other.as_str(),
                "recording is not whole; replayed as recorded, with a clean end"
            );
            ReplayEnding::Complete
        }
        None => {
            tracing::warn!(
                recording = name,
                "recording has no end line (cut short); replayed as recorded, with a clean end"
            );
            ReplayEnding::Complete
        }
    }
}

fn head_differences(recorded: &MatchKey, sent: &MatchKey) -> Vec<String> {
    let mut out = Vec::new();
    if recorded.method != sent.method {
        out.push(format!("method (recorded {})", recorded.method));
    }
    if recorded.path != sent.path {
        out.push(format!("path (recorded {})", recorded.path));
    }
    if recorded.query != sent.query {
        // Credentials are not part of the key, so neither side's can show here.
        out.push(format!("query (recorded {:?})", recorded.query));
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let error = |cause| LoadError::Walk {
        path: dir.to_path_buf(),
        cause,
    };
    for item in std::fs::read_dir(dir).map_err(error)? {
        let item = item.map_err(error)?;
        let path = item.path();
        let hidden = item.file_name().to_string_lossy().starts_with('.');
        let kind = item.file_type().map_err(error)?;
        if kind.is_dir() && !hidden {
            walk(&path, out)?;
        } else if (crate::record::layout::is_recording(&path)
            || crate::interop::is_importable(&path))
            && !kind.is_dir()
        {
            out.push(path);
        }
    }
    Ok(())
}

fn relative_name(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// Compare names with runs of digits compared as numbers: `t-9` < `t-10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut left, mut right) = (a.as_bytes(), b.as_bytes());
    loop {
        match (left.first(), right.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let (l_digits, l_rest) = split_digits(left);
                let (r_digits, r_rest) = split_digits(right);
                let l_trim = trim_zeros(l_digits);
                let r_trim = trim_zeros(r_digits);
                let by_value = l_trim.len().cmp(&r_trim.len()).then(l_trim.cmp(r_trim));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                (left, right) = (l_rest, r_rest);
            }
            (Some(x), Some(y)) if x != y => return x.cmp(y),
            _ => (left, right) = (&left[1..], &right[1..]),
        }
    }
}

fn split_digits(bytes: &[u8]) -> (&[u8], &[u8]) {
    let end = bytes
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(bytes.len());
    bytes.split_at(end)
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let start = digits
        .iter()
        .position(|b| *b != b'0')
        .unwrap_or(digits.len());
    &digits[start..]
}

#[cfg(test)]
mod tests;

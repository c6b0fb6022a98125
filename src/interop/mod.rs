//! Other tools' fixture formats, in and out: vcrpy cassettes ([`vcr`]) and HAR 1.2 ([`har`]).
//!
//! Import: `check`, `replay` and `report` read a cassette (`*.yaml`, `*.yml`, LangChain's
//! gzip'd `*.yaml.gz`) or a HAR file (`*.har`) as recordings, one per interaction or entry,
//! through [`read`], which [`files::each_recording`] calls for such a path. Neither format
//! keeps chunk boundaries: the body is cut into one frame per SSE event (after each blank line)
//! and the file's note says the boundaries were synthesized, unless the file carries
//! tooltap's own key (`x_tooltap` in a cassette's response, `_tooltap` in a HAR entry) whose
//! frame lengths add up to the body: then the recorded boundaries, times and ending come back.
//!
//! Files ([`files`]): the folder walk and the reader that take tooltap's recordings and other
//! tools' fixtures alike, for every command that reads recordings.
//!
//! Export ([`export`]): `tooltap export --format vcr|har` writes recordings as cassettes or a HAR
//! file, the frames joined into the body, tooltap's key beside it, credentials dropped.
//! docs/interop.md is the prose version.

pub mod export;
pub mod files;
mod foreign;
pub mod har;
pub mod vcr;
mod yaml_read;
mod yaml_write;

use std::path::Path;

pub use foreign::{EXTRA_VERSION, Extra, ExtraEnd, Foreign, ForeignBody, ForeignError, reason};

use crate::record::{ReadError, Recording};

/// A fixture format tooltap reads and writes besides its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A vcrpy cassette (YAML, format version 1).
    Vcr,
    /// An HTTP Archive, version 1.2.
    Har,
}

impl Format {
    /// The format a file's name says it holds (`None` for tooltap's own and anything else).
    /// Hidden files are never read (an editor's swap file, a temporary file).
    pub fn of(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?;
        if name.starts_with('.') {
            return None;
        }
        let name = name.strip_suffix(".gz").unwrap_or(name);
        if name.ends_with(".yaml") || name.ends_with(".yml") {
            Some(Format::Vcr)
        } else if name.ends_with(".har") && !path.to_string_lossy().ends_with(".gz") {
            Some(Format::Har)
        } else {
            None
        }
    }

    /// How notes and messages name the format.
    pub fn label(self) -> &'static str {
        match self {
            Format::Vcr => "vcrpy cassette",
            Format::Har => "HAR file",
        }
    }

    /// The route name an imported exchange gets when the file does not say tooltap's.
    fn route(self) -> &'static str {
        match self {
            Format::Vcr => "vcr",
            Format::Har => "har",
        }
    }

    /// tooltap's own key in this format.
    fn key(self) -> &'static str {
        match self {
            Format::Vcr => "x_tooltap",
            Format::Har => "_tooltap",
        }
    }
}

/// The most bytes a foreign file is read as (and a gzip'd cassette inflated to), whatever the
/// reader's own bound: `check --max-input-bytes` may lower it; `replay`, which bounds its own
/// recordings by nothing, gets this one for cassettes and HAR files. A foreign file is held
/// whole while it is read (its YAML or JSON tree, then its exchanges), several times its size
/// in memory (docs/reliability.md), unlike a recording, which is read one at a time.
pub const MAX_FOREIGN_BYTES: u64 = 64 * 1024 * 1024;

/// Whether a folder walk (`check`, `report`, `replay`, `export`) takes this file as a foreign
/// fixture: a `*.har`, a gzip'd cassette, or a `*.yaml`/`*.yml` with a top-level
/// `interactions:` (vcrpy, pydantic-ai) or `requests:` (LangChain) line in its first
/// [`SNIFF_BYTES`]; vcrpy and PyYAML write keys sorted, so `interactions` comes first. Other
/// YAML in a walked folder (a CI workflow, a compose file) is no recording and is passed over;
/// named on the command line, any YAML is read, and one that is not a cassette is an error.
pub fn is_importable(path: &Path) -> bool {
    match Format::of(path) {
        Some(Format::Vcr) if !path.to_string_lossy().ends_with(".gz") => looks_like_cassette(path),
        Some(_) => true,
        None => false,
    }
}

/// How much of a YAML file a folder walk reads to tell a cassette.
pub const SNIFF_BYTES: u64 = 4096;

fn looks_like_cassette(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let read =
        std::fs::File::open(path).and_then(|file| file.take(SNIFF_BYTES).read_to_end(&mut head));
    // An unreadable file is taken, so that the reader names it and why.
    if read.is_err() {
        return true;
    }
    head.split(|b| *b == b'\n')
        .any(|line| line.starts_with(b"interactions:") || line.starts_with(b"requests:"))
}

/// Whether tooltap judged this exchange when it happened: every recording of its own, and a
/// foreign one only when tooltap's key came back with it (vcrpy and HAR writers judge nothing).
pub fn has_live_verdict(recording: &Recording) -> bool {
    match Format::of(&recording.path) {
        Some(format) => recording.meta.route != format.route(),
        None => true,
    }
}

/// What reading a foreign file found, for the note a reader prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportNote {
    pub format: Format,
    /// Exchanges read.
    pub exchanges: usize,
    /// Of those, exchanges whose frame boundaries were synthesized (one frame per SSE event).
    pub synthesized: usize,
}

impl ImportNote {
    /// The sentence a reader prints for the file.
    pub fn text(self, path: &Path) -> String {
        let (label, key) = (self.format.label(), self.format.key());
        let restored = self.exchanges - self.synthesized;
        let mut text = format!(
            "{}: a {label}, {} exchange(s)",
            path.display(),
            self.exchanges
        );
        if self.synthesized > 0 {
            text.push_str(&format!(
                "; frame boundaries synthesized for {} (one frame per SSE event: the format \
                 keeps none, so `seq` counts events, not network reads; times are 0)",
                self.synthesized
            ));
        }
        if restored > 0 {
            text.push_str(&format!(
                "; boundaries, times and ending from tooltap's `{key}` for {restored}"
            ));
        }
        text
    }
}

/// Every exchange of a foreign file (`bytes`, at most `max_bytes`, already read), each a
/// recording or the error that stands in its place, handed to `take` one at a time (a
/// recording is built from its exchange when it is handed over, and the exchange dropped); a
/// file that is not of its format at all is one error naming it.
pub fn read(
    format: Format,
    path: &Path,
    bytes: &[u8],
    max_bytes: u64,
    take: &mut dyn FnMut(Result<Recording, ReadError>),
) -> ImportNote {
    let mut note = ImportNote {
        format,
        exchanges: 0,
        synthesized: 0,
    };
    let invalid = |message: String| ReadError::Invalid {
        path: path.to_path_buf(),
        line: 1,
        message,
    };
    let foreign = match format {
        Format::Vcr => {
            let gzip = path.to_string_lossy().ends_with(".gz");
            vcr::read(bytes, gzip, max_bytes).map_err(|error| match error {
                ForeignError::TooLarge => ReadError::TooLarge {
                    path: path.to_path_buf(),
                    max_bytes,
                },
                ForeignError::Invalid(message) => invalid(message),
            })
        }
        Format::Har => har::read(bytes).map_err(|message| invalid(message.to_string())),
    };
    let exchanges = match foreign {
        Ok(exchanges) => exchanges,
        Err(error) => {
            take(Err(error));
            return note;
        }
    };
    let unit = match format {
        Format::Vcr => "interaction",
        Format::Har => "entry",
    };
    for (index, exchange) in exchanges.into_iter().enumerate() {
        take(match exchange {
            Ok(exchange) => {
                let (recording, synthesized) = exchange.into_recording(format, path, index);
                note.exchanges += 1;
                note.synthesized += usize::from(synthesized);
                Ok(recording)
            }
            Err(message) => Err(invalid(format!("{unit} {index}: {message}"))),
        });
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_the_name() {
        assert_eq!(Format::of(Path::new("c/test_x.yaml")), Some(Format::Vcr));
        assert_eq!(Format::of(Path::new("c/test_x.yml")), Some(Format::Vcr));
        assert_eq!(Format::of(Path::new("c/test_x.yaml.gz")), Some(Format::Vcr));
        assert_eq!(Format::of(Path::new("run.har")), Some(Format::Har));
        assert_eq!(Format::of(Path::new("run.har.gz")), None);
        assert_eq!(Format::of(Path::new(".hidden.yaml")), None);
        assert_eq!(Format::of(Path::new("t1.jsonl")), None);
    }

    #[test]
    fn a_walk_takes_yaml_that_looks_like_a_cassette_only() {
        let dir = crate::test_dir::TestDir::new("interop-sniff");
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        assert!(is_importable(&write(
            "c.yaml",
            "interactions:\n- request: {}\n"
        )));
        assert!(is_importable(&write(
            "l.yml",
            "# langchain\nrequests: []\n"
        )));
        assert!(!is_importable(&write("ci.yml", "name: ci\non: [push]\n")));
        assert!(!is_importable(&write(
            "k.yaml",
            "spec:\n  interactions: 1\n"
        )));
        assert!(is_importable(&write("any.har", "not even json")));
        assert!(!is_importable(&write("t1.jsonl", "{}")));
    }
}

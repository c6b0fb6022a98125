//! The `[record]` and `[redact]` sections: which exchanges are written to disk as recordings,
//! where, within which limits, and what is redacted first.
//!
//! Input: the raw sections (file, `TOOLTAP_RECORD`/`TOOLTAP_RECORDINGS`, `--record`/
//! `--recordings`). Output: the [`RecorderConfig`] the recorder is spawned with.

use std::path::PathBuf;

use serde::Deserialize;

use crate::record::{RecordMode, RecorderConfig, RedactionConfig};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRecord {
    /// `off`, `violations` or `all`.
    pub mode: Option<RecordMode>,
    pub dir: Option<PathBuf>,
    pub max_bytes_per_recording: Option<u64>,
    pub max_total_bytes: Option<u64>,
    pub max_files: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRedact {
    /// Header names redacted besides the built-in list.
    pub headers: Option<Vec<String>>,
    /// JSON pointers into the request body whose values are redacted.
    pub body_pointers: Option<Vec<String>>,
}

impl RawRecord {
    pub fn overlay(self, higher: RawRecord) -> RawRecord {
        RawRecord {
            mode: higher.mode.or(self.mode),
            dir: higher.dir.or(self.dir),
            max_bytes_per_recording: higher
                .max_bytes_per_recording
                .or(self.max_bytes_per_recording),
            max_total_bytes: higher.max_total_bytes.or(self.max_total_bytes),
            max_files: higher.max_files.or(self.max_files),
        }
    }
}

impl RawRedact {
    pub fn overlay(self, higher: RawRedact) -> RawRedact {
        RawRedact {
            headers: higher.headers.or(self.headers),
            body_pointers: higher.body_pointers.or(self.body_pointers),
        }
    }
}

pub fn validate(record: RawRecord, redact: RawRedact) -> RecorderConfig {
    let RawRecord {
        mode,
        dir,
        max_bytes_per_recording,
        max_total_bytes,
        max_files,
    } = record;
    let RawRedact {
        headers,
        body_pointers,
    } = redact;
    let defaults = RecorderConfig::default();
    RecorderConfig {
        dir: dir.unwrap_or(defaults.dir),
        mode: mode.unwrap_or(defaults.mode),
        max_bytes_per_recording: max_bytes_per_recording
            .unwrap_or(defaults.max_bytes_per_recording),
        max_total_bytes,
        max_files,
        max_queued_bytes: defaults.max_queued_bytes,
        redact: RedactionConfig {
            headers: headers.unwrap_or_default(),
            body_pointers: body_pointers.unwrap_or_default(),
        },
    }
}

//! The `[record]` and `[redact]` sections: which exchanges are written to disk as recordings,
//! where, within which limits, and what is redacted first.
//!
//! Input: the raw sections (file, `TOOLTAP_RECORD`/`TOOLTAP_RECORDINGS`, `--record`/
//! `--recordings`). Output: the [`RecorderConfig`] the recorder is spawned with, and the
//! [`Rotation`] of the violations file (`record.violations_max_bytes`, `record.violations_keep`).

use std::path::PathBuf;

use serde::Deserialize;

use crate::jsonl_sink::Rotation;
use crate::record::{RecordLayout, RecordMode, RecorderConfig, RedactionConfig};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRecord {
    /// `off`, `violations` or `all`.
    pub mode: Option<RecordMode>,
    /// `files` or `segments`.
    pub layout: Option<RecordLayout>,
    /// Size at which a segment file is closed (`layout = "segments"`).
    pub segment_bytes: Option<u64>,
    pub dir: Option<PathBuf>,
    pub max_bytes_per_recording: Option<u64>,
    /// 0 means no limit.
    pub max_total_bytes: Option<u64>,
    /// 0 means no limit.
    pub max_files: Option<usize>,
    /// Size at which the violations file is rotated.
    pub violations_max_bytes: Option<u64>,
    /// Rotated violations files kept.
    pub violations_keep: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRedact {
    /// Header names redacted besides the built-in list.
    pub headers: Option<Vec<String>>,
    /// JSON pointers into the request body whose values are redacted.
    pub body_pointers: Option<Vec<String>>,
    /// Header names never redacted by pattern.
    pub allow_headers: Option<Vec<String>>,
    /// Query parameter names redacted besides the patterns.
    pub query_params: Option<Vec<String>>,
    /// Query parameter names never redacted by pattern.
    pub allow_query_params: Option<Vec<String>>,
}

impl RawRecord {
    pub fn overlay(self, higher: RawRecord) -> RawRecord {
        RawRecord {
            mode: higher.mode.or(self.mode),
            layout: higher.layout.or(self.layout),
            segment_bytes: higher.segment_bytes.or(self.segment_bytes),
            dir: higher.dir.or(self.dir),
            max_bytes_per_recording: higher
                .max_bytes_per_recording
                .or(self.max_bytes_per_recording),
            max_total_bytes: higher.max_total_bytes.or(self.max_total_bytes),
            max_files: higher.max_files.or(self.max_files),
            violations_max_bytes: higher.violations_max_bytes.or(self.violations_max_bytes),
            violations_keep: higher.violations_keep.or(self.violations_keep),
        }
    }
}

impl RawRedact {
    pub fn overlay(self, higher: RawRedact) -> RawRedact {
        RawRedact {
            headers: higher.headers.or(self.headers),
            body_pointers: higher.body_pointers.or(self.body_pointers),
            allow_headers: higher.allow_headers.or(self.allow_headers),
            query_params: higher.query_params.or(self.query_params),
            allow_query_params: higher.allow_query_params.or(self.allow_query_params),
        }
    }
}

/// Default bound on the recordings folder: 1 GiB ...
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;
/// ... or 10,000 recordings, whichever is reached first (oldest deleted first).
pub const DEFAULT_MAX_FILES: usize = 10_000;

pub fn validate(record: RawRecord, redact: RawRedact) -> (RecorderConfig, Rotation) {
    let RawRecord {
        mode,
        layout,
        segment_bytes,
        dir,
        max_bytes_per_recording,
        max_total_bytes,
        max_files,
        violations_max_bytes,
        violations_keep,
    } = record;
    let RawRedact {
        headers,
        body_pointers,
        allow_headers,
        query_params,
        allow_query_params,
    } = redact;
    let defaults = RecorderConfig::default();
    let rotation = Rotation {
        max_bytes: violations_max_bytes
            .unwrap_or(Rotation::default().max_bytes)
            .max(1),
        keep: violations_keep.unwrap_or(Rotation::default().keep),
    };
    let config = RecorderConfig {
        dir: dir.unwrap_or(defaults.dir),
        mode: mode.unwrap_or(defaults.mode),
        layout: layout.unwrap_or(defaults.layout),
        segment_bytes: segment_bytes.unwrap_or(defaults.segment_bytes).max(1),
        max_bytes_per_recording: max_bytes_per_recording
            .unwrap_or(defaults.max_bytes_per_recording),
        // 0 lifts the bound; unset takes the default one.
        max_total_bytes: Some(max_total_bytes.unwrap_or(DEFAULT_MAX_TOTAL_BYTES))
            .filter(|n| *n > 0),
        max_files: Some(max_files.unwrap_or(DEFAULT_MAX_FILES)).filter(|n| *n > 0),
        max_queued_bytes: defaults.max_queued_bytes,
        redact: RedactionConfig {
            headers: headers.unwrap_or_default(),
            body_pointers: body_pointers.unwrap_or_default(),
            allow_headers: allow_headers.unwrap_or_default(),
            query_params: query_params.unwrap_or_default(),
            allow_query_params: allow_query_params.unwrap_or_default(),
        },
    };
    (config, rotation)
}

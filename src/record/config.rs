//! The recorder's settings: which exchanges to keep, where, and how much disk they may use.
//!
//! Input: built by the proxy's configuration (TOML/env/flags, validated elsewhere) or by tests.
//! Output: a [`RecorderConfig`] handed to [`crate::record::Recorder::spawn`].

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::redact::RedactionConfig;

/// Which exchanges are written to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordMode {
    /// Nothing is recorded.
    Off,
    /// Only exchanges with at least one violation are kept (staging monitoring).
    #[default]
    Violations,
    /// Every exchange is kept (fixture capture).
    All,
}

impl RecordMode {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordMode::Off => "off",
            RecordMode::Violations => "violations",
            RecordMode::All => "all",
        }
    }
}

impl fmt::Display for RecordMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not `off`, `violations` or `all`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown record mode {0:?} (expected off, violations or all)")]
pub struct UnknownRecordMode(pub String);

impl FromStr for RecordMode {
    type Err = UnknownRecordMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "off" => Ok(RecordMode::Off),
            "violations" => Ok(RecordMode::Violations),
            "all" => Ok(RecordMode::All),
            other => Err(UnknownRecordMode(other.to_owned())),
        }
    }
}

/// How kept recordings are laid out on disk (docs/recording-format.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordLayout {
    /// One file per exchange, `<route>/<date>/<id>.jsonl`: fixtures by name.
    #[default]
    Files,
    /// Finished recordings appended to one `segment-<first-id>.jsonl` per route and day, cut at
    /// `segment_bytes`; a recording that outgrows the writer's hold gets its own file. No file
    /// created, renamed or deleted per exchange: for `--record all` on busy traffic.
    Segments,
}

impl RecordLayout {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordLayout::Files => "files",
            RecordLayout::Segments => "segments",
        }
    }
}

impl fmt::Display for RecordLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A layout name that is not `files` or `segments`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown record layout {0:?} (expected files or segments)")]
pub struct UnknownRecordLayout(pub String);

impl FromStr for RecordLayout {
    type Err = UnknownRecordLayout;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "files" => Ok(RecordLayout::Files),
            "segments" => Ok(RecordLayout::Segments),
            other => Err(UnknownRecordLayout(other.to_owned())),
        }
    }
}

/// Everything the recorder needs; see the field docs for defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecorderConfig {
    /// Root of `<route>/<yyyy-mm-dd>/<exchange-id>.jsonl`. Default `recordings`.
    pub dir: PathBuf,
    /// Default [`RecordMode::Violations`].
    pub mode: RecordMode,
    /// Default [`RecordLayout::Files`].
    pub layout: RecordLayout,
    /// Size past which a segment file is closed and the next one begins
    /// ([`RecordLayout::Segments`]). Default 4 MiB.
    pub segment_bytes: u64,
    /// Request body plus response frame bytes one recording may hold; beyond it frames are not
    /// written and the outcome is `truncated`. Default 16 MiB.
    pub max_bytes_per_recording: u64,
    /// When set, the oldest recordings are deleted once the kept ones exceed this many bytes.
    pub max_total_bytes: Option<u64>,
    /// When set, the oldest recordings are deleted once more than this many are kept.
    pub max_files: Option<usize>,
    /// Bytes waiting for the writer thread before further frames are dropped (the recording is
    /// then `lossy`). Bounds memory when the disk is slower than the traffic. Default 32 MiB.
    pub max_queued_bytes: usize,
    pub redact: RedactionConfig,
    /// `Some` for `--recordings s3://bucket/prefix`: `dir` is then the local spool, and what
    /// is finished there is uploaded ([`crate::record::store`]). Default `None`.
    pub store: Option<crate::record::store::StoreConfig>,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig {
            dir: PathBuf::from("recordings"),
            mode: RecordMode::Violations,
            layout: RecordLayout::Files,
            segment_bytes: 4 * 1024 * 1024,
            max_bytes_per_recording: 16 * 1024 * 1024,
            max_total_bytes: None,
            max_files: None,
            max_queued_bytes: 32 * 1024 * 1024,
            redact: RedactionConfig::default(),
            store: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_through_text_and_serde() {
        for mode in [RecordMode::Off, RecordMode::Violations, RecordMode::All] {
            assert_eq!(mode.as_str().parse::<RecordMode>(), Ok(mode));
            let json = serde_json::to_string(&mode).expect("serializes");
            assert_eq!(json, format!("\"{mode}\""));
        }
        assert!("everything".parse::<RecordMode>().is_err());
        assert_eq!(RecorderConfig::default().mode, RecordMode::Violations);
        for layout in [RecordLayout::Files, RecordLayout::Segments] {
            assert_eq!(layout.as_str().parse::<RecordLayout>(), Ok(layout));
            let json = serde_json::to_string(&layout).expect("serializes");
            assert_eq!(json, format!("\"{layout}\""));
        }
        assert!("segment".parse::<RecordLayout>().is_err());
    }
}

//! The `[record]` and `[redact]` sections: which exchanges are written to disk as recordings,
//! where, within which limits, and what is redacted first.
//!
//! Input: the raw sections (file, `TOOLTAP_RECORD`/`TOOLTAP_RECORDINGS`, `--record`/
//! `--recordings`). Output: the [`RecorderConfig`] the recorder is spawned with, and the
//! [`Rotation`] of the violations file (`record.violations_max_bytes`, `record.violations_keep`).

use std::path::PathBuf;

use serde::Deserialize;

use crate::record::store::{
    BadStoreUrl, DEFAULT_MAX_QUEUED_BYTES, DEFAULT_MAX_SPOOL_BYTES, S3Settings, StoreConfig,
    StoreUrl,
};
use crate::record::{RecordLayout, RecordMode, RecorderConfig, RedactionConfig};
use crate::violations_file::Rotation;

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
    /// `[record.s3]`: reaching the store when `dir` is `s3://bucket/prefix`.
    pub s3: Option<RawS3>,
}

/// `[record.s3]`; every key left out takes the AWS environment variable of the same meaning.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawS3 {
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// Local folder recordings are written to before upload.
    pub spool: Option<PathBuf>,
    /// Bytes of recordings accepted for upload at once.
    pub max_queued_bytes: Option<u64>,
    /// Bytes the spool may hold while the store is slow or down.
    pub max_spool_bytes: Option<u64>,
}

impl RawS3 {
    fn overlay(self, higher: RawS3) -> RawS3 {
        RawS3 {
            endpoint: higher.endpoint.or(self.endpoint),
            region: higher.region.or(self.region),
            access_key_id: higher.access_key_id.or(self.access_key_id),
            secret_access_key: higher.secret_access_key.or(self.secret_access_key),
            session_token: higher.session_token.or(self.session_token),
            spool: higher.spool.or(self.spool),
            max_queued_bytes: higher.max_queued_bytes.or(self.max_queued_bytes),
            max_spool_bytes: higher.max_spool_bytes.or(self.max_spool_bytes),
        }
    }
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
            s3: match (self.s3, higher.s3) {
                (Some(lower), Some(higher)) => Some(lower.overlay(higher)),
                (lower, higher) => higher.or(lower),
            },
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

/// Validates the sections; an `s3://` location that names no bucket is the one error (the AWS
/// variables `[record.s3]` leaves unset are read when the store is opened).
pub fn validate(
    record: RawRecord,
    redact: RawRedact,
) -> Result<(RecorderConfig, Rotation), BadStoreUrl> {
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
        s3,
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
    let dir = dir.unwrap_or(defaults.dir);
    let store = match dir.to_str().and_then(StoreUrl::parse) {
        Some(url) => Some(store_config(url?, s3.unwrap_or_default())),
        None => None,
    };
    let config = RecorderConfig {
        dir: store.as_ref().map_or(dir, |store| store.spool.clone()),
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
        store,
    };
    Ok((config, rotation))
}

fn store_config(url: StoreUrl, s3: RawS3) -> StoreConfig {
    let RawS3 {
        endpoint,
        region,
        access_key_id,
        secret_access_key,
        session_token,
        spool,
        max_queued_bytes,
        max_spool_bytes,
    } = s3;
    let settings = S3Settings {
        endpoint,
        region,
        access_key_id,
        secret_access_key,
        session_token,
    };
    StoreConfig {
        spool: spool.unwrap_or_else(|| StoreConfig::default_spool(&url)),
        url,
        settings,
        max_queued_bytes: max_queued_bytes.unwrap_or(DEFAULT_MAX_QUEUED_BYTES).max(1),
        max_spool_bytes: max_spool_bytes.unwrap_or(DEFAULT_MAX_SPOOL_BYTES),
    }
}

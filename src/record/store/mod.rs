//! Recordings in S3-compatible object storage: `--recordings s3://bucket/prefix`.
//!
//! Input: an `s3://bucket/prefix` location and its [`S3Settings`] (a `[record.s3]` section, or
//! the environment variables the AWS SDKs read). Output: an [`ObjectStore`] client over
//! tooltap's own hyper + rustls/ring stack ([`connector`]), used by the [`upload`]er (the
//! recorder writes into a local spool folder as it writes any folder; finished recordings and
//! closed segments are uploaded from there and deleted once stored) and by [`fetch`] (`check`,
//! `report`, `replay` and `export` copy a prefix into a temporary folder and read that).
//! Object keys are `<prefix>/<path under the folder>`: the folder layout, unchanged.

pub mod connector;
pub mod fetch;
pub mod upload;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, RetryConfig};

/// The scheme that names object storage wherever a recordings folder is accepted.
pub const SCHEME: &str = "s3://";
/// Default bound on the bytes of finished recordings waiting in memory for upload.
pub const DEFAULT_MAX_QUEUED_BYTES: u64 = 64 * 1024 * 1024;
/// Default bound on the spool folder (recordings waiting for a store that is slow or down).
pub const DEFAULT_MAX_SPOOL_BYTES: u64 = 1024 * 1024 * 1024;
/// Retries of one request to the store end after this long (the connector bounds each try).
const RETRY_TIMEOUT: Duration = Duration::from_secs(10);

/// A bucket and a key prefix, from `s3://bucket/prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    pub bucket: String,
    /// Without leading or trailing `/`; empty for the bucket's root.
    pub prefix: String,
}

/// A location that is not a usable `s3://bucket/prefix`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an s3://bucket/prefix location (a bucket name is required)")]
pub struct BadStoreUrl(pub String);

impl StoreUrl {
    /// `None` when `text` is not an `s3://` location at all (a folder).
    pub fn parse(text: &str) -> Option<Result<StoreUrl, BadStoreUrl>> {
        let rest = text.strip_prefix(SCHEME)?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Some(Err(BadStoreUrl(text.to_string())));
        }
        Some(Ok(StoreUrl {
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
        }))
    }

    /// Where a path relative to the recordings folder is stored.
    pub fn key(&self, relative: &str) -> StorePath {
        if self.prefix.is_empty() {
            StorePath::from(relative)
        } else {
            StorePath::from(format!("{}/{relative}", self.prefix))
        }
    }

    /// The prefix as a store path (`None` for the bucket's root).
    pub fn prefix_path(&self) -> Option<StorePath> {
        (!self.prefix.is_empty()).then(|| StorePath::from(self.prefix.as_str()))
    }
}

impl std::fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.bucket, self.prefix)
    }
}

/// How to reach the store. Each field left empty in the config takes the environment variable
/// the AWS SDKs read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct S3Settings {
    /// `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`: an S3-compatible server. When set,
    /// requests are path-style (`<endpoint>/<bucket>/<key>`).
    pub endpoint: Option<String>,
    /// `AWS_REGION` or `AWS_DEFAULT_REGION`; `us-east-1` when neither is set.
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
}

impl S3Settings {
    /// Fills the fields the config left empty from the environment (`var` reads one variable).
    pub fn with_env(mut self, var: impl Fn(&str) -> Option<String>) -> S3Settings {
        let first = |names: &[&str]| names.iter().find_map(|name| var(name));
        let fill = |field: &mut Option<String>, names: &[&str]| {
            if field.is_none() {
                *field = first(names).filter(|value| !value.is_empty());
            }
        };
        fill(
            &mut self.endpoint,
            &["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"],
        );
        fill(&mut self.region, &["AWS_REGION", "AWS_DEFAULT_REGION"]);
        fill(&mut self.access_key_id, &["AWS_ACCESS_KEY_ID"]);
        fill(&mut self.secret_access_key, &["AWS_SECRET_ACCESS_KEY"]);
        fill(&mut self.session_token, &["AWS_SESSION_TOKEN"]);
        self
    }
}

/// Recording to object storage: where, how to reach it, and the bounds of the way there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    pub url: StoreUrl,
    pub settings: S3Settings,
    /// The local folder recordings are written to before upload, and kept in while the store
    /// is slow or down.
    pub spool: PathBuf,
    /// Bytes of finished recordings read into memory for upload at once; past it they wait in
    /// the spool.
    pub max_queued_bytes: u64,
    /// Bytes the spool may hold; past it the oldest waiting recordings are deleted and counted.
    pub max_spool_bytes: u64,
}

impl StoreConfig {
    /// The default spool of a location: `<temp>/tooltap-spool/<bucket>/<prefix>`.
    pub fn default_spool(url: &StoreUrl) -> PathBuf {
        let mut spool = std::env::temp_dir().join("tooltap-spool");
        spool.push(super::layout::segment(&url.bucket));
        for part in url.prefix.split('/').filter(|part| !part.is_empty()) {
            spool.push(super::layout::segment(part));
        }
        spool
    }
}

/// The store could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("object storage {url}: {source}")]
    Build {
        url: String,
        source: object_store::Error,
    },
    #[error("object storage {url}: cannot set up TLS: {source}")]
    Tls {
        url: String,
        source: crate::tls::TlsError,
    },
    #[error("object storage {url}: {source}")]
    Io { url: String, source: std::io::Error },
    #[error("object storage {url}: {source}")]
    Store {
        url: String,
        source: object_store::Error,
    },
}

/// An S3 client for `url`: path-style when an endpoint is given, create-only writes through
/// `If-None-Match: *`, and few, short retries (a store that is down must not hold an upload
/// for minutes: the file waits in the spool instead).
pub fn open(url: &StoreUrl, settings: &S3Settings) -> Result<Arc<dyn ObjectStore>, StoreError> {
    let connector = connector::HyperConnector::new().map_err(|source| StoreError::Tls {
        url: url.to_string(),
        source,
    })?;
    let mut builder = AmazonS3Builder::new()
        .with_bucket_name(&url.bucket)
        .with_region(settings.region.as_deref().unwrap_or("us-east-1"))
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_http_connector(connector)
        .with_retry(RetryConfig {
            max_retries: 2,
            retry_timeout: RETRY_TIMEOUT,
            ..RetryConfig::default()
        });
    if let Some(endpoint) = &settings.endpoint {
        builder = builder
            .with_endpoint(endpoint)
            .with_virtual_hosted_style_request(false)
            .with_allow_http(endpoint.starts_with("http://"));
    }
    if let Some(key) = &settings.access_key_id {
        builder = builder.with_access_key_id(key);
    }
    if let Some(secret) = &settings.secret_access_key {
        builder = builder.with_secret_access_key(secret);
    }
    if let Some(token) = &settings.session_token {
        builder = builder.with_token(token);
    }
    let store = builder.build().map_err(|source| StoreError::Build {
        url: url.to_string(),
        source,
    })?;
    Ok(Arc::new(store))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_into_a_bucket_and_a_prefix() {
        assert_eq!(StoreUrl::parse("recordings"), None, "a folder");
        let url = StoreUrl::parse("s3://b/staging/rec/").and_then(Result::ok);
        assert_eq!(
            url,
            Some(StoreUrl {
                bucket: "b".into(),
                prefix: "staging/rec".into()
            })
        );
        let url = url.unwrap_or_else(|| StoreUrl {
            bucket: String::new(),
            prefix: String::new(),
        });
        assert_eq!(
            url.key("r/2026-12-06/t1.jsonl").as_ref(),
            "staging/rec/r/2026-12-06/t1.jsonl"
        );
        let root = StoreUrl::parse("s3://b").and_then(Result::ok);
        assert_eq!(
            root.map(|url| url.key("x.jsonl").to_string()),
            Some("x.jsonl".into())
        );
        assert!(matches!(StoreUrl::parse("s3:///x"), Some(Err(_))));
    }

    #[test]
    fn the_config_wins_and_the_environment_fills_the_rest() {
        let env = |name: &str| match name {
            "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:9".to_string()),
            "AWS_DEFAULT_REGION" => Some("eu-west-1".to_string()),
            "AWS_ACCESS_KEY_ID" => Some("from-env".to_string()),
            _ => None,
        };
        let settings = S3Settings {
            access_key_id: Some("from-config".into()),
            ..S3Settings::default()
        }
        .with_env(env);
        assert_eq!(settings.endpoint.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(settings.region.as_deref(), Some("eu-west-1"));
        assert_eq!(settings.access_key_id.as_deref(), Some("from-config"));
        assert_eq!(settings.session_token, None);
    }
}

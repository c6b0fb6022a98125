//! The `TOOLTAP_*` environment layer: sits between the config file and the CLI flags.
//!
//! Input: a lookup function (the binary passes `std::env::var`; tests pass a map, so no test
//! mutates the process environment). Output: a partial [`RawConfig`] plus the config file path
//! from `TOOLTAP_CONFIG`. A malformed value is an error naming the variable.

use std::path::PathBuf;
use std::str::FromStr;

use super::ConfigError;
use super::raw::{LogFormat, RawConfig};

/// Every variable this layer reads, with the key it sets; `docs/configuration.md` lists them.
pub const VARIABLES: &[(&str, &str)] = &[
    ("TOOLTAP_CONFIG", "config file path (--config)"),
    ("TOOLTAP_LISTEN", "proxy.listen"),
    ("TOOLTAP_UPSTREAM", "proxy.upstream"),
    ("TOOLTAP_DIALECT", "proxy.dialect"),
    ("TOOLTAP_CONNECT_TIMEOUT", "timeouts.connect"),
    ("TOOLTAP_FIRST_BYTE_TIMEOUT", "timeouts.first_byte"),
    ("TOOLTAP_POOL_IDLE_TIMEOUT", "timeouts.pool_idle"),
    ("TOOLTAP_HEADER_READ_TIMEOUT", "timeouts.header_read"),
    ("TOOLTAP_STREAM_IDLE_TIMEOUT", "timeouts.stream_idle"),
    ("TOOLTAP_REQUEST_BODY_TIMEOUT", "timeouts.request_body"),
    ("TOOLTAP_MAX_CONNECTIONS", "proxy.max_connections"),
    ("TOOLTAP_UPSTREAM_MAX_IDLE", "proxy.upstream_max_idle"),
    (
        "TOOLTAP_UPSTREAM_MAX_CONNECTIONS",
        "proxy.upstream_max_connections",
    ),
    ("TOOLTAP_SHUTDOWN_GRACE", "shutdown.grace"),
    ("TOOLTAP_EXTRA_CA", "tls.extra_ca"),
    ("TOOLTAP_LOG_FORMAT", "log.format"),
    ("TOOLTAP_INSPECT", "inspect.enabled"),
    ("TOOLTAP_ENFORCE", "inspect.enforce"),
    ("TOOLTAP_ENFORCE_STATUS", "enforce.status"),
    ("TOOLTAP_VIOLATIONS", "inspect.violations"),
    ("TOOLTAP_ADMIN_LISTEN", "admin.listen"),
    ("TOOLTAP_RECORD", "record.mode"),
    ("TOOLTAP_RECORD_LAYOUT", "record.layout"),
    ("TOOLTAP_WORKER_THREADS", "runtime.worker_threads"),
    ("TOOLTAP_RECORDINGS", "record.dir"),
    (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "otlp.endpoint (with /v1/traces appended)",
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "otlp.endpoint (as written)",
    ),
    ("OTEL_EXPORTER_OTLP_HEADERS", "otlp.headers"),
    ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "otlp.headers"),
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf only"),
    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf only"),
    ("OTEL_SERVICE_NAME", "otlp.service_name"),
    ("OTEL_RESOURCE_ATTRIBUTES", "otlp.resource_attributes"),
    ("OTEL_SDK_DISABLED", "true: no OTLP export"),
];

/// What the environment contributes.
#[derive(Debug, Default)]
pub struct EnvLayer {
    pub config_path: Option<PathBuf>,
    pub raw: RawConfig,
}

impl EnvLayer {
    pub fn read(lookup: impl Fn(&str) -> Option<String>) -> Result<EnvLayer, ConfigError> {
        // Empty values count as unset: `TOOLTAP_UPSTREAM= tooltap proxy` should not fail.
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let mut layer = EnvLayer {
            config_path: get("TOOLTAP_CONFIG").map(PathBuf::from),
            ..EnvLayer::default()
        };
        let raw = &mut layer.raw;
        raw.proxy.listen = parse(&get, "TOOLTAP_LISTEN")?;
        raw.proxy.upstream = get("TOOLTAP_UPSTREAM");
        raw.proxy.dialect = get("TOOLTAP_DIALECT");
        raw.timeouts.connect = parse(&get, "TOOLTAP_CONNECT_TIMEOUT")?;
        raw.timeouts.first_byte = parse(&get, "TOOLTAP_FIRST_BYTE_TIMEOUT")?;
        raw.timeouts.pool_idle = parse(&get, "TOOLTAP_POOL_IDLE_TIMEOUT")?;
        raw.timeouts.header_read = parse(&get, "TOOLTAP_HEADER_READ_TIMEOUT")?;
        raw.timeouts.stream_idle = parse(&get, "TOOLTAP_STREAM_IDLE_TIMEOUT")?;
        raw.timeouts.request_body = parse(&get, "TOOLTAP_REQUEST_BODY_TIMEOUT")?;
        raw.proxy.max_connections = parse(&get, "TOOLTAP_MAX_CONNECTIONS")?;
        raw.proxy.upstream_max_idle = parse(&get, "TOOLTAP_UPSTREAM_MAX_IDLE")?;
        raw.proxy.upstream_max_connections = parse(&get, "TOOLTAP_UPSTREAM_MAX_CONNECTIONS")?;
        raw.shutdown.grace = parse(&get, "TOOLTAP_SHUTDOWN_GRACE")?;
        raw.tls.extra_ca = get("TOOLTAP_EXTRA_CA").map(PathBuf::from);
        raw.inspect.enabled = parse_bool(&get, "TOOLTAP_INSPECT")?;
        raw.inspect.enforce = parse_bool(&get, "TOOLTAP_ENFORCE")?;
        raw.enforce.status = parse(&get, "TOOLTAP_ENFORCE_STATUS")?;
        raw.inspect.violations = get("TOOLTAP_VIOLATIONS").map(PathBuf::from);
        raw.admin.listen = get("TOOLTAP_ADMIN_LISTEN");
        raw.record.mode = parse(&get, "TOOLTAP_RECORD")?;
        raw.record.layout = parse(&get, "TOOLTAP_RECORD_LAYOUT")?;
        raw.runtime.worker_threads = parse(&get, "TOOLTAP_WORKER_THREADS")?;
        raw.record.dir = get("TOOLTAP_RECORDINGS").map(PathBuf::from);
        raw.otlp = super::otlp::read_env(&get);
        raw.log.format = match get("TOOLTAP_LOG_FORMAT") {
            None => None,
            Some(text) => Some(parse_log_format(&text).ok_or_else(|| ConfigError::Env {
                variable: "TOOLTAP_LOG_FORMAT",
                message: format!("`{text}` is neither `human` nor `json`"),
            })?),
        };
        Ok(layer)
    }
}

fn parse<T>(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
) -> Result<Option<T>, ConfigError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    get(variable)
        .map(|text| {
            text.trim().parse::<T>().map_err(|error| ConfigError::Env {
                variable,
                message: format!("`{text}`: {error}"),
            })
        })
        .transpose()
}

/// The usual spellings of a boolean: `1/0`, `true/false`, `yes/no`, `on/off` (any case).
fn parse_bool(
    get: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
) -> Result<Option<bool>, ConfigError> {
    get(variable)
        .map(|text| match text.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(ConfigError::Env {
                variable,
                message: format!(
                    "`{text}` is not a boolean: use 1/0, true/false, yes/no or on/off"
                ),
            }),
        })
        .transpose()
}

fn parse_log_format(text: &str) -> Option<LogFormat> {
    match text.trim().to_ascii_lowercase().as_str() {
        "human" => Some(LogFormat::Human),
        "json" => Some(LogFormat::Json),
        _ => None,
    }
}

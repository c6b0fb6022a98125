//! The runtime configuration: typed, validated, with every default in one place.
//!
//! Input: three [`RawConfig`] layers, merged with the precedence CLI flag > `TOOLTAP_*`
//! variable > config file > default. The file is read only when a path is given (`--config` or
//! `TOOLTAP_CONFIG`), so a fresh clone runs with no file at all. Output: a [`Config`] that
//! `proxy::server::serve` and `proxy::forward::Forwarder` consume; nothing downstream re-reads the environment.

mod duration;
mod env;
pub mod inspect;
pub mod mcp_state;
pub mod otlp;
mod raw;
pub mod record;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use duration::{DurationError, HumanDuration};
pub use env::{EnvLayer, VARIABLES as ENV_VARIABLES};
pub use raw::{
    LogFormat, RawConfig, RawLog, RawProxy, RawRoute, RawRuntime, RawShutdown, RawTimeouts, RawTls,
};

use crate::route::{Route, RouteError, RouteTable, UpstreamUrl};
use inspect::{AdminSettings, InspectConfigError, InspectSettings, RoutePolicy};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
pub const DEFAULT_UPSTREAM: &str = "https://api.openai.com";
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A buffered (non-streamed) completion sends its head only when generation is done; the
/// OpenAI SDKs wait 600 s by default, so a shorter deadline here would cut off slow answers
/// that work without tooltap.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(600);
pub const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// Reasoning models can think for minutes between events; keep this above the longest pause.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Time a client has to send its request body, before the extension below: a body trickled at
/// 1 byte/s would otherwise hold a connection and an upstream request open for ever.
pub const DEFAULT_REQUEST_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Every this many bytes of request body received extend the deadline by one second.
pub const DEFAULT_REQUEST_BODY_MIN_RATE: u64 = 500;
/// Client connections open at once on the proxy listener, unless `ulimit -n` allows fewer
/// (see [`crate::accept_loop::cap_for_fds`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Connections open at once on the admin listener: scrapers and probes, a handful.
pub const DEFAULT_ADMIN_MAX_CONNECTIONS: usize = 64;
/// Idle pooled upstream connections kept per upstream host (`proxy.upstream_max_idle`): as
/// many as the `keepalive 256` the benchmark's nginx keeps, so a burst's connections are reused
/// without every finished stream's connection holding its buffers for `timeouts.pool_idle`.
pub const DEFAULT_UPSTREAM_MAX_IDLE: usize = 256;

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub routes: RouteTable,
    pub timeouts: Timeouts,
    pub tls: TlsSettings,
    pub shutdown: ShutdownSettings,
    pub log: LogSettings,
    pub inspect: InspectSettings,
    pub admin: AdminSettings,
    pub record: crate::record::RecorderConfig,
    pub connections: ConnectionLimits,
    /// Size bound of the violations file.
    pub violations_file: crate::violations_file::Rotation,
    /// Tokio worker threads; `None` = one per core; 1 = a single-threaded runtime.
    pub worker_threads: Option<usize>,
    /// Quirks injected into live responses (`--inject`); empty unless asked for.
    pub inject: crate::quirk::InjectSettings,
    /// OpenTelemetry export of exchange spans (`[otlp]`); off unless an endpoint is given.
    pub otlp: crate::otlp::OtlpSettings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP connect to the upstream (per resolved address).
    pub connect: Duration,
    /// From sending the request until the upstream's response head arrives (→ 504).
    pub first_byte: Duration,
    /// How long an unused pooled upstream connection is kept.
    pub pool_idle: Duration,
    /// How long a client may take to send its request head.
    pub header_read: Duration,
    /// Longest silence inside an upstream response body before it is cut.
    pub stream_idle: Duration,
    /// Time for the client's request body, extended by 1 s per `request_body_min_rate` bytes.
    pub request_body: Duration,
    /// Bytes per second of request body that keep the deadline moving.
    pub request_body_min_rate: u64,
}

/// Connections open at once, per listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// The proxy listener (and the replay server's).
    pub proxy: usize,
    pub admin: usize,
    /// Idle pooled upstream connections kept per upstream host; more are closed when their
    /// exchange ends (0: no pooling). Each idle one holds hyper's buffers (see
    /// docs/benchmarks.md#upstream-idle).
    pub upstream_idle: usize,
    /// Upstream connections open at once per upstream host; at the cap a request waits up to
    /// `timeouts.connect` for one to be handed back, then gets 503 `upstream_busy`.
    pub upstream_max: usize,
}

impl ConnectionLimits {
    /// The default proxy cap: [`DEFAULT_MAX_CONNECTIONS`], lowered to what `ulimit -n` leaves
    /// room for (a client socket and an upstream socket per connection).
    pub fn default_proxy() -> usize {
        let fds = crate::accept_loop::open_files_limit().map_or(usize::MAX, |n| {
            crate::accept_loop::cap_for_fds(n, crate::accept_loop::FD_RESERVE)
        });
        DEFAULT_MAX_CONNECTIONS.min(fds)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsSettings {
    /// PEM bundle trusted in addition to the bundled webpki roots.
    pub extra_ca: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownSettings {
    /// How long in-flight exchanges may run after SIGINT/SIGTERM before they are cut.
    pub grace: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSettings {
    pub format: LogFormat,
}

/// Every message is complete on its own (it names the file, key or variable and the cause), so
/// these errors expose no `source()`: printing the chain would repeat the cause.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {cause}", path.display())]
    ReadFile {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("config file {}: {cause}", path.display())]
    ParseFile {
        path: PathBuf,
        cause: Box<toml::de::Error>,
    },
    #[error("environment variable {variable}: {message}")]
    Env {
        variable: &'static str,
        message: String,
    },
    #[error("{cause}{}", origin_suffix(origin.as_deref()))]
    Inspect {
        origin: Option<PathBuf>,
        cause: InspectConfigError,
    },
    #[error("{key}{}: {message}", origin_suffix(origin.as_deref()))]
    Value {
        key: &'static str,
        origin: Option<PathBuf>,
        message: String,
    },
    #[error("{key}{}: must be at least 1", origin_suffix(origin.as_deref()))]
    Zero {
        key: &'static str,
        origin: Option<PathBuf>,
    },
    #[error("{key}{}: {cause}", origin_suffix(origin.as_deref()))]
    Inject {
        key: String,
        origin: Option<PathBuf>,
        cause: crate::quirk::inject::InjectError,
    },
    #[error("{key}{}: {cause}", origin_suffix(origin.as_deref()))]
    Route {
        key: String,
        origin: Option<PathBuf>,
        cause: RouteError,
    },
    #[error("{cause}{}", origin_suffix(origin.as_deref()))]
    Otlp {
        origin: Option<PathBuf>,
        cause: otlp::OtlpConfigError,
    },
    #[error("{key}{}: {cause}", origin_suffix(origin.as_deref()))]
    Dialect {
        key: String,
        origin: Option<PathBuf>,
        cause: crate::engine::UnknownDialect,
    },
}

fn origin_suffix(origin: Option<&Path>) -> String {
    origin.map_or_else(String::new, |path| format!(" (in {})", path.display()))
}

impl Config {
    /// Merge the layers (`cli` over `env` over the file) and validate. `cli_config_path` is
    /// `--config`; when neither it nor `TOOLTAP_CONFIG` is set, no file is read.
    pub fn from_layers(
        cli_config_path: Option<PathBuf>,
        env: EnvLayer,
        cli: RawConfig,
    ) -> Result<Config, ConfigError> {
        let EnvLayer {
            config_path,
            raw: env_raw,
        } = env;
        let path = cli_config_path.or(config_path);
        let file_raw = match &path {
            Some(path) => read_file(path)?,
            None => RawConfig::default(),
        };
        Config::validate(file_raw.overlay(env_raw).overlay(cli), path.as_deref())
    }

    /// Turn a merged raw config into the runtime type. `origin` is the file the routes came
    /// from, named in route errors.
    pub fn validate(raw: RawConfig, origin: Option<&Path>) -> Result<Config, ConfigError> {
        let RawConfig {
            proxy,
            timeouts,
            tls,
            shutdown,
            log,
            inspect,
            enforce,
            admin,
            runtime,
            record,
            redact,
            inject: raw_inject,
            otlp: raw_otlp,
            routes,
        } = raw;
        let otlp = otlp::validate(raw_otlp).map_err(|cause| ConfigError::Otlp {
            origin: origin.map(Path::to_path_buf),
            cause,
        })?;
        let inject_error = |key: String| {
            let origin = origin.map(Path::to_path_buf);
            move |cause| ConfigError::Inject { key, origin, cause }
        };
        let mut inject = crate::quirk::InjectSettings::new(raw_inject.seed, raw_inject.max_hold);
        if let Some(list) = raw_inject.quirks.as_deref() {
            inject
                .set_default(list)
                .map_err(inject_error("inject.quirks (--inject)".into()))?;
        }
        let route_error = |key: String| {
            let origin = origin.map(Path::to_path_buf);
            move |cause| ConfigError::Route { key, origin, cause }
        };
        let default_upstream = proxy.upstream.as_deref().unwrap_or(DEFAULT_UPSTREAM);
        let default_upstream = UpstreamUrl::parse(default_upstream).map_err(route_error(
            "proxy.upstream (--upstream, TOOLTAP_UPSTREAM)".into(),
        ))?;
        let dialect_named = |name: Option<String>, key: String| {
            name.map(|name| name.parse())
                .transpose()
                .map_err(|cause| ConfigError::Dialect {
                    key,
                    origin: origin.map(Path::to_path_buf),
                    cause,
                })
        };
        let mut named = Vec::with_capacity(routes.len());
        let mut policies = std::collections::HashMap::new();
        let default_dialect = dialect_named(
            proxy.dialect.clone(),
            "proxy.dialect (--dialect, TOOLTAP_DIALECT)".into(),
        )?;
        if default_dialect.is_some() {
            policies.insert(
                crate::route::DEFAULT_ROUTE.to_string(),
                RoutePolicy {
                    dialect: default_dialect,
                    ..RoutePolicy::default()
                },
            );
        }
        for (
            index,
            RawRoute {
                name,
                prefix,
                upstream,
                inspect,
                enforce,
                inject: route_inject,
                dialect,
            },
        ) in routes.into_iter().enumerate()
        {
            let dialect = dialect_named(dialect, format!("routes[{index}].dialect"))?;
            if let Some(list) = route_inject.as_deref() {
                inject
                    .set_route(name.trim(), list)
                    .map_err(inject_error(format!("routes[{index}].inject")))?;
            }
            policies.insert(
                name.trim().to_string(),
                RoutePolicy {
                    inspect,
                    enforce,
                    dialect,
                },
            );
            let route = UpstreamUrl::parse(&upstream)
                .and_then(|upstream| Route::new(&name, &prefix, upstream))
                .map_err(route_error(format!("routes[{index}] (name = {name:?})")))?;
            named.push(route);
        }
        let routes =
            RouteTable::new(default_upstream, named).map_err(route_error("routes".into()))?;
        let (inspect, admin) =
            inspect::validate(inspect, enforce, admin, policies).map_err(|cause| {
                ConfigError::Inspect {
                    origin: origin.map(Path::to_path_buf),
                    cause,
                }
            })?;
        let or = |value: Option<HumanDuration>, default| value.map_or(default, |d| d.0);
        let (record, violations_file) =
            record::validate(record, redact).map_err(|error| ConfigError::Value {
                key: "record.dir",
                origin: origin.map(Path::to_path_buf),
                message: error.to_string(),
            })?;
        let positive = |value: Option<usize>, default: fn() -> usize, key| match value {
            Some(0) => Err(ConfigError::Zero {
                key,
                origin: origin.map(Path::to_path_buf),
            }),
            other => Ok(other.unwrap_or_else(default)),
        };
        let proxy_max = positive(
            proxy.max_connections,
            ConnectionLimits::default_proxy,
            "proxy.max_connections",
        )?;
        let connections = ConnectionLimits {
            proxy: proxy_max,
            admin: positive(
                proxy.admin_max_connections,
                || DEFAULT_ADMIN_MAX_CONNECTIONS,
                "proxy.admin_max_connections",
            )?,
            upstream_idle: proxy.upstream_max_idle.unwrap_or(DEFAULT_UPSTREAM_MAX_IDLE),
            // Each HTTP/1.1 client connection holds at most one upstream connection at a time:
            // the client cap is the natural default, and the bound matters for h2 clients.
            upstream_max: match proxy.upstream_max_connections {
                None => proxy_max,
                set => positive(
                    set,
                    ConnectionLimits::default_proxy,
                    "proxy.upstream_max_connections",
                )?,
            },
        };
        Ok(Config {
            listen: proxy.listen.unwrap_or_else(default_listen),
            routes,
            timeouts: Timeouts {
                connect: or(timeouts.connect, DEFAULT_CONNECT_TIMEOUT),
                first_byte: or(timeouts.first_byte, DEFAULT_FIRST_BYTE_TIMEOUT),
                pool_idle: or(timeouts.pool_idle, DEFAULT_POOL_IDLE_TIMEOUT),
                header_read: or(timeouts.header_read, DEFAULT_HEADER_READ_TIMEOUT),
                stream_idle: or(timeouts.stream_idle, DEFAULT_STREAM_IDLE_TIMEOUT),
                request_body: or(timeouts.request_body, DEFAULT_REQUEST_BODY_TIMEOUT),
                request_body_min_rate: timeouts
                    .request_body_min_rate
                    .unwrap_or(DEFAULT_REQUEST_BODY_MIN_RATE)
                    .max(1),
            },
            tls: TlsSettings {
                extra_ca: tls.extra_ca,
            },
            shutdown: ShutdownSettings {
                grace: or(shutdown.grace, DEFAULT_SHUTDOWN_GRACE),
            },
            log: LogSettings {
                format: log.format.unwrap_or_default(),
            },
            inspect,
            admin,
            record,
            connections,
            violations_file,
            worker_threads: match runtime.worker_threads {
                // A runtime with no worker at all cannot run: say so instead of guessing.
                Some(0) => {
                    return Err(ConfigError::Value {
                        key: "runtime.worker_threads",
                        origin: origin.map(Path::to_path_buf),
                        message: "0 worker threads cannot run anything: give 1 or more, or leave \
                                  it unset for one per CPU"
                            .into(),
                    });
                }
                other => other,
            },
            inject,
            otlp,
        })
    }
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8787))
}

/// Read and parse one TOML file; errors name the file (and, from serde, the offending key).
pub fn read_file(path: &Path) -> Result<RawConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::ReadFile {
        path: path.to_path_buf(),
        cause,
    })?;
    toml::from_str(&text).map_err(|cause| ConfigError::ParseFile {
        path: path.to_path_buf(),
        cause: Box::new(cause),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_listen_matches_the_documented_constant() {
        assert_eq!(default_listen().to_string(), DEFAULT_LISTEN);
    }

    #[test]
    fn no_file_and_no_overrides_gives_the_defaults() {
        let config =
            Config::from_layers(None, EnvLayer::default(), RawConfig::default()).expect("valid");
        assert_eq!(config.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(
            config.routes.default_route().upstream.as_str(),
            DEFAULT_UPSTREAM
        );
        assert_eq!(config.timeouts.first_byte, DEFAULT_FIRST_BYTE_TIMEOUT);
        assert_eq!(config.log.format, LogFormat::Human);
    }
}

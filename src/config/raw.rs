//! The configuration as written: every key optional, unknown keys rejected.
//!
//! Input: a TOML file (serde, `deny_unknown_fields` on every table), the `TOOLTAP_*` environment
//! layer and the CLI layer, which all produce a [`RawConfig`]. Output: one merged [`RawConfig`]
//! that `config::Config::validate` turns into the typed runtime configuration.
//!
//! Adding a section later (`[inspect]`, `[admin]`, `[record]`, `[redact]`) is one struct here,
//! one field on [`RawConfig`] and one line in [`RawConfig::overlay`].

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::duration::HumanDuration;
use super::inspect::{RawAdmin, RawEnforce, RawInspect};
use super::otlp::RawOtlp;
use super::record::{RawRecord, RawRedact};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    pub proxy: RawProxy,
    #[serde(default)]
    pub timeouts: RawTimeouts,
    #[serde(default)]
    pub tls: RawTls,
    #[serde(default)]
    pub shutdown: RawShutdown,
    #[serde(default)]
    pub log: RawLog,
    #[serde(default)]
    pub inspect: RawInspect,
    #[serde(default)]
    pub enforce: RawEnforce,
    #[serde(default)]
    pub admin: RawAdmin,
    #[serde(default)]
    pub runtime: RawRuntime,
    #[serde(default)]
    pub record: RawRecord,
    #[serde(default)]
    pub redact: RawRedact,
    #[serde(default)]
    pub inject: RawInject,
    /// `[otlp]`: OpenTelemetry export of exchange spans.
    #[serde(default)]
    pub otlp: RawOtlp,
    #[serde(default)]
    pub routes: Vec<RawRoute>,
}

/// `[inject]`: quirks applied to live responses (`--inject`, docs/quirks.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInject {
    /// `ID[:RATE],...` for every route without its own `inject`.
    pub quirks: Option<String>,
    /// Seed of the per-exchange draw.
    pub seed: Option<u64>,
    /// Bytes a live quirk may hold (an event cut across frames, a buffered body).
    pub max_hold: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProxy {
    pub listen: Option<SocketAddr>,
    pub upstream: Option<String>,
    /// Client connections open at once on the proxy (and replay) listener.
    pub max_connections: Option<usize>,
    /// Connections open at once on the admin listener.
    pub admin_max_connections: Option<usize>,
    /// Idle pooled upstream connections kept per upstream host.
    pub upstream_max_idle: Option<usize>,
    /// Upstream connections open at once per upstream host.
    pub upstream_max_connections: Option<usize>,
    /// The dialect the default route's inspected paths are judged as (`chat`, `responses`,
    /// `anthropic`); unset: the one the path names.
    pub dialect: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTimeouts {
    pub connect: Option<HumanDuration>,
    pub first_byte: Option<HumanDuration>,
    pub pool_idle: Option<HumanDuration>,
    pub header_read: Option<HumanDuration>,
    pub stream_idle: Option<HumanDuration>,
    pub request_body: Option<HumanDuration>,
    /// Bytes per second that each extend `request_body` by one second.
    pub request_body_min_rate: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTls {
    pub extra_ca: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawShutdown {
    pub grace: Option<HumanDuration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRuntime {
    /// Tokio worker threads; 1 runs a single-threaded runtime.
    pub worker_threads: Option<usize>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    pub format: Option<LogFormat>,
}

/// `human` for terminals, `json` (one object per line) for log collectors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
}

/// One `[[routes]]` entry: requests whose path starts with `prefix` go to `upstream`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoute {
    pub name: String,
    pub prefix: String,
    pub upstream: String,
    /// Overrides `inspect.enabled` for this route.
    pub inspect: Option<bool>,
    /// Overrides `inspect.enforce` for this route.
    pub enforce: Option<bool>,
    /// Overrides `inject.quirks` for this route (`""` injects nothing here).
    pub inject: Option<String>,
    /// The dialect every inspected path of this route is judged as; unset: the one the path
    /// names.
    pub dialect: Option<String>,
}

impl RawConfig {
    /// `higher` wins key by key. Routes are a list: a higher layer that sets any replaces them
    /// all (env and CLI never do, so in practice routes come from the file).
    pub fn overlay(self, higher: RawConfig) -> RawConfig {
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
            inject,
            otlp,
            routes,
        } = higher;
        RawConfig {
            proxy: RawProxy {
                listen: proxy.listen.or(self.proxy.listen),
                upstream: proxy.upstream.or(self.proxy.upstream),
                max_connections: proxy.max_connections.or(self.proxy.max_connections),
                admin_max_connections: proxy
                    .admin_max_connections
                    .or(self.proxy.admin_max_connections),
                upstream_max_idle: proxy.upstream_max_idle.or(self.proxy.upstream_max_idle),
                upstream_max_connections: proxy
                    .upstream_max_connections
                    .or(self.proxy.upstream_max_connections),
                dialect: proxy.dialect.or(self.proxy.dialect),
            },
            timeouts: RawTimeouts {
                connect: timeouts.connect.or(self.timeouts.connect),
                first_byte: timeouts.first_byte.or(self.timeouts.first_byte),
                pool_idle: timeouts.pool_idle.or(self.timeouts.pool_idle),
                header_read: timeouts.header_read.or(self.timeouts.header_read),
                stream_idle: timeouts.stream_idle.or(self.timeouts.stream_idle),
                request_body: timeouts.request_body.or(self.timeouts.request_body),
                request_body_min_rate: timeouts
                    .request_body_min_rate
                    .or(self.timeouts.request_body_min_rate),
            },
            tls: RawTls {
                extra_ca: tls.extra_ca.or(self.tls.extra_ca),
            },
            shutdown: RawShutdown {
                grace: shutdown.grace.or(self.shutdown.grace),
            },
            log: RawLog {
                format: log.format.or(self.log.format),
            },
            inspect: self.inspect.overlay(inspect),
            enforce: self.enforce.overlay(enforce),
            admin: RawAdmin {
                listen: admin.listen.or(self.admin.listen),
            },
            runtime: RawRuntime {
                worker_threads: runtime.worker_threads.or(self.runtime.worker_threads),
            },
            record: self.record.overlay(record),
            redact: self.redact.overlay(redact),
            inject: RawInject {
                quirks: inject.quirks.or(self.inject.quirks),
                seed: inject.seed.or(self.inject.seed),
                max_hold: inject.max_hold.or(self.inject.max_hold),
            },
            otlp: self.otlp.overlay(otlp),
            routes: if routes.is_empty() {
                self.routes
            } else {
                routes
            },
        }
    }
}

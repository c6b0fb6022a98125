//! The command line: `tooltap <subcommand>`, parsed with clap.
//!
//! Input: `argv`. Output: a [`Cli`] whose subcommands turn their flags into a configuration
//! layer ([`RawConfig`]) that `config::Config::from_layers` puts above the environment and the
//! file. `check` (see [`crate::check`]) and `replay` are further variants of [`Command`] with
//! their own `Args` structs.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{HumanDuration, LogFormat, RawConfig};
use crate::replay::args::ReplayArgs;

#[derive(Debug, Parser)]
#[command(
    name = "tooltap",
    version,
    about = "A recording HTTP proxy that checks OpenAI-compatible function-calling traffic",
    long_about = "tooltap sits between an app and an OpenAI-compatible API. Point the app's base \
                  URL at it (e.g. http://127.0.0.1:8787/v1): every byte is forwarded unchanged \
                  and without delay, while tool calls in the responses are checked against the \
                  function-calling contract."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the transparent proxy in front of an upstream API.
    Proxy(ProxyArgs),
    /// Serve recordings with their exact fragment boundaries, as fixtures for tests.
    Replay(ReplayArgs),
    /// Re-judge recorded exchanges (or a capture made elsewhere) with the contract engine.
    Check(crate::check::CheckArgs),
    /// Write one self-contained HTML page showing recorded exchanges, re-judged.
    Report(crate::report::ReportArgs),
    /// List the quirks `replay --quirk` and `proxy --inject` can apply (see docs/quirks.md).
    Quirks(crate::quirk::list::QuirksArgs),
    /// Write recordings as vcrpy cassettes or a HAR file (see docs/interop.md).
    Export(crate::interop::export::ExportArgs),
}

/// Flags of `tooltap proxy`. Each overrides its `TOOLTAP_*` variable, which overrides the file.
#[derive(Debug, Args)]
#[command(
    after_help = "Precedence: flag > TOOLTAP_* environment variable > config file > \
                        default. Durations are written like 250ms, 30s, 5m, 1h. Without \
                        --config (or TOOLTAP_CONFIG) no file is read. Log verbosity: RUST_LOG."
)]
pub struct ProxyArgs {
    /// TOML config file (see config/tooltap.toml) [env: TOOLTAP_CONFIG]
    #[arg(long, short = 'c', value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8787] [env: TOOLTAP_LISTEN]
    #[arg(long, value_name = "ADDR", value_parser = crate::accept_loop::listen_address)]
    pub listen: Option<SocketAddr>,
    /// Upstream base URL of the default route; may carry a path prefix such as
    /// https://api.groq.com/openai [default: https://api.openai.com] [env: TOOLTAP_UPSTREAM]
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// The dialect the default route's inspected paths are judged as: chat, responses or
    /// anthropic [default: the one the path names] [env: TOOLTAP_DIALECT]
    #[arg(long, value_name = "NAME")]
    pub dialect: Option<String>,
    /// TCP connect timeout to the upstream [default: 10s] [env: TOOLTAP_CONNECT_TIMEOUT]
    #[arg(long, value_name = "DURATION")]
    pub connect_timeout: Option<HumanDuration>,
    /// Time allowed until the upstream's response head arrives; 504 after it
    /// [default: 600s] [env: TOOLTAP_FIRST_BYTE_TIMEOUT]
    #[arg(long, value_name = "DURATION")]
    pub first_byte_timeout: Option<HumanDuration>,
    /// Idle time before a pooled upstream connection is closed
    /// [default: 90s] [env: TOOLTAP_POOL_IDLE_TIMEOUT]
    #[arg(long, value_name = "DURATION")]
    pub pool_idle_timeout: Option<HumanDuration>,
    /// Time a client may take to send its request head
    /// [default: 30s] [env: TOOLTAP_HEADER_READ_TIMEOUT]
    #[arg(long, value_name = "DURATION")]
    pub header_read_timeout: Option<HumanDuration>,
    /// Longest silence inside an upstream response body (between two frames) before the
    /// stream is cut [default: 600s] [env: TOOLTAP_STREAM_IDLE_TIMEOUT]
    #[arg(long, value_name = "DURATION")]
    pub stream_idle_timeout: Option<HumanDuration>,
    /// How long in-flight exchanges may continue after SIGINT/SIGTERM
    /// [default: 30s] [env: TOOLTAP_SHUTDOWN_GRACE]
    #[arg(long, value_name = "DURATION")]
    pub shutdown_grace: Option<HumanDuration>,
    /// Extra PEM CA bundle trusted for HTTPS upstreams, besides the bundled webpki roots
    /// [env: TOOLTAP_EXTRA_CA]
    #[arg(long, value_name = "PATH")]
    pub extra_ca: Option<PathBuf>,
    /// Log output format [default: human] [env: TOOLTAP_LOG_FORMAT]
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Inspect matching traffic (POST .../chat/completions by default); `false` makes tooltap a
    /// plain pass-through [default: true] [env: TOOLTAP_INSPECT]
    #[arg(long, value_name = "BOOL")]
    pub inspect: Option<bool>,
    /// Enforce mode: a buffered response with an error-severity violation becomes a 502, a
    /// stream ends with an error event [env: TOOLTAP_ENFORCE]
    #[arg(long)]
    pub enforce: bool,
    /// The status enforce mode refuses a buffered response with: any 4xx or 5xx, e.g. 422 for
    /// clients that retry 502s [default: 502] [env: TOOLTAP_ENFORCE_STATUS]
    #[arg(long, value_name = "STATUS")]
    pub enforce_status: Option<u16>,
    /// Append violations as JSON lines to this file; `off` disables it
    /// [default: violations.jsonl, beside the recordings folder] [env: TOOLTAP_VIOLATIONS]
    #[arg(long, value_name = "PATH")]
    pub violations: Option<PathBuf>,
    /// Admin listener (/metrics, /healthz, /readyz); `off` disables it
    /// [default: 127.0.0.1:9787] [env: TOOLTAP_ADMIN_LISTEN]
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<String>,
    /// Which exchanges to record: off, violations (only those with violations) or all
    /// [default: violations] [env: TOOLTAP_RECORD]
    #[arg(long, value_name = "MODE")]
    pub record: Option<crate::record::RecordMode>,
    /// How kept recordings are laid out: files (one per exchange: fixtures to name, diff and
    /// commit) or segments (appended to one file per route and day). With --record all on busy
    /// traffic use segments: the CPU budget for recording everything is met with segments, not
    /// with a new file per exchange (docs/recording-format.md)
    /// [default: files] [env: TOOLTAP_RECORD_LAYOUT]
    #[arg(long, value_name = "LAYOUT")]
    pub record_layout: Option<crate::record::RecordLayout>,
    /// Folder for recordings, laid out as <route>/<yyyy-mm-dd>/<exchange-id>.jsonl, or
    /// s3://bucket/prefix for object storage (AWS_* variables or [record.s3], docs/deploy.md)
    /// [default: recordings] [env: TOOLTAP_RECORDINGS]
    #[arg(long, value_name = "DIR")]
    pub recordings: Option<PathBuf>,
    /// Tokio worker threads; 1 runs everything on one thread, which can beat two on a small,
    /// shared machine (see docs/benchmarks.md) [default: one per core]
    /// [env: TOOLTAP_WORKER_THREADS]
    #[arg(long, value_name = "N")]
    pub worker_threads: Option<usize>,
    /// Per-rule severity, e.g. finish_reason.not_tool_calls=warning,delta.id_repeated=off
    #[arg(long, value_name = "RULE=LEVEL,...")]
    pub severity: Option<String>,
    /// Inject quirks into live responses (after the upstream, before the client), each with a
    /// probability: args-as-object:0.2,done-missing (rate 1 when omitted); `tooltap quirks`
    /// lists the ids, docs/quirks.md explains them
    #[arg(long, value_name = "ID[:RATE],...")]
    pub inject: Option<String>,
    /// Seed of the --inject draw: the same seed gives the same quirks to the same exchanges
    /// [default: 0]
    #[arg(long, value_name = "N")]
    pub inject_seed: Option<u64>,
    /// Export one OpenTelemetry span per inspected exchange to this OTLP/HTTP collector
    /// (protobuf), e.g. http://127.0.0.1:4318; `/v1/traces` is appended when the URL has no path
    /// [default: off] [env: OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT]
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Put the response's messages (text and tool calls) on the exported spans as
    /// `gen_ai.output.messages`, at most otlp.max_content_bytes [default: off]
    #[arg(long)]
    pub otlp_content: bool,
}

impl ProxyArgs {
    /// The config file path (if given) and the CLI layer.
    pub fn into_layer(self) -> (Option<PathBuf>, RawConfig) {
        let ProxyArgs {
            config,
            listen,
            upstream,
            dialect,
            connect_timeout,
            first_byte_timeout,
            pool_idle_timeout,
            header_read_timeout,
            stream_idle_timeout,
            shutdown_grace,
            extra_ca,
            log_format,
            inspect,
            enforce,
            enforce_status,
            violations,
            admin_listen,
            record,
            record_layout,
            recordings,
            worker_threads,
            severity,
            inject,
            inject_seed,
            otlp_endpoint,
            otlp_content,
        } = self;
        let mut raw = RawConfig::default();
        raw.proxy.listen = listen;
        raw.proxy.upstream = upstream;
        raw.proxy.dialect = dialect;
        raw.timeouts.connect = connect_timeout;
        raw.timeouts.first_byte = first_byte_timeout;
        raw.timeouts.pool_idle = pool_idle_timeout;
        raw.timeouts.header_read = header_read_timeout;
        raw.timeouts.stream_idle = stream_idle_timeout;
        raw.shutdown.grace = shutdown_grace;
        raw.tls.extra_ca = extra_ca;
        raw.log.format = log_format;
        raw.inspect.enabled = inspect;
        raw.inspect.enforce = enforce.then_some(true);
        raw.enforce.status = enforce_status;
        raw.inspect.violations = violations;
        raw.admin.listen = admin_listen;
        raw.record.mode = record;
        raw.record.layout = record_layout;
        raw.record.dir = recordings;
        raw.runtime.worker_threads = worker_threads;
        raw.inject.quirks = inject;
        raw.inject.seed = inject_seed;
        raw.otlp.endpoint = otlp_endpoint;
        raw.otlp.content = otlp_content.then_some(true);
        raw.inspect.severity = severity.map(|list| {
            // Validated with the rest of the config; a malformed item is kept whole so the
            // error message can name it.
            list.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| match item.split_once('=') {
                    Some((rule, level)) => (rule.trim().to_string(), level.trim().to_string()),
                    None => (item.to_string(), String::new()),
                })
                .collect()
        });
        (config, raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_bare_proxy_listen_port_says_an_address_is_wanted() {
        let error = Cli::try_parse_from(["tooltap", "proxy", "--listen", "4640"])
            .expect_err("a bare port")
            .to_string();
        assert!(error.contains("--listen"), "{error}");
        assert!(error.contains("an address is wanted"), "{error}");
        assert!(error.contains("127.0.0.1:4640"), "{error}");
    }

    #[test]
    fn proxy_flags_become_a_layer() {
        let cli = Cli::try_parse_from([
            "tooltap",
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--first-byte-timeout",
            "2s",
            "--log-format",
            "json",
            "-c",
            "x.toml",
        ])
        .expect("parses");
        let Command::Proxy(args) = cli.command else {
            panic!("proxy subcommand expected");
        };
        let (path, raw) = args.into_layer();
        assert_eq!(path, Some(PathBuf::from("x.toml")));
        assert_eq!(raw.proxy.listen.map(|a| a.port()), Some(0));
        assert_eq!(raw.timeouts.first_byte.map(|d| d.0.as_secs()), Some(2));
        assert_eq!(raw.log.format, Some(LogFormat::Json));
        assert!(raw.proxy.upstream.is_none());
    }

    #[test]
    fn bad_durations_are_rejected_by_the_parser() {
        let result = Cli::try_parse_from(["tooltap", "proxy", "--connect-timeout", "10"]);
        assert!(result.is_err());
    }
}

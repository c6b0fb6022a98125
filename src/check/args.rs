//! The flags of `tooltap check`, parsed by clap as part of [`crate::cli::Cli`].
//!
//! Input: `argv` after `tooltap check`. Output: a [`CheckArgs`] that [`crate::check::run`]
//! reads, and the engine configuration its severity overrides make.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use crate::engine::{EngineConfig, SeverityOverrides};

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Per exchange with violations: the rules broken and where; then a summary.
    Human,
    /// One JSON document: a summary, every exchange with its violations, unreadable inputs.
    Json,
    /// JUnit XML: one testcase per exchange, one failure per violation at or above --fail-on.
    Junit,
}

/// The lowest severity that makes the exit code 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
}

/// `tooltap check [PATH]... [--request FILE --response FILE]`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Exit status: 0 clean, 1 a violation at or above --fail-on, 2 usage \
                        errors, unreadable input (named with file and line) or no exchange \
                        at all (unless --allow-empty). Folders are walked recursively for \
                        *.jsonl recordings, vcrpy cassettes (*.yaml, *.yml, *.yaml.gz) and HAR \
                        files (*.har); unfinished (temporary) recordings are skipped."
)]
pub struct CheckArgs {
    /// Recording files, or folders walked recursively for *.jsonl (and vcrpy cassettes *.yaml,
    /// *.yml, *.yaml.gz and HAR files *.har, see docs/interop.md), or s3://bucket/prefix
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value = "human")]
    pub format: OutputFormat,
    /// Lowest severity that fails the check (exit code 1)
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
    /// Per-rule severities, e.g. finish_reason.not_tool_calls=warning,delta.id_repeated=off
    #[arg(long, value_name = "RULE=LEVEL,...", value_parser = SeverityOverrides::parse_list)]
    pub severity: Option<SeverityOverrides>,
    /// A request body captured elsewhere (checked with --response)
    #[arg(long, value_name = "FILE", requires = "response")]
    pub request: Option<PathBuf>,
    /// The response body bytes captured elsewhere: an SSE stream or a JSON body
    #[arg(long, value_name = "FILE", requires = "request")]
    pub response: Option<PathBuf>,
    /// The response's content type [default: sniffed from the body]
    #[arg(long, value_name = "TYPE", requires = "response")]
    pub content_type: Option<String>,
    /// The response's content encoding (gzip, br, zstd) [default: gzip when the bytes say so]
    #[arg(long, value_name = "ENCODING", requires = "response")]
    pub content_encoding: Option<String>,
    /// The captured exchange's dialect: the request path it was sent to, e.g. /v1/responses
    /// (a path ending in /responses is the Responses API), with its query where it matters
    /// (Gemini's `...:streamGenerateContent?alt=sse`) [default: /v1/chat/completions]
    #[arg(long, value_name = "PATH", requires = "response")]
    pub path: Option<String>,
    /// The captured exchange's dialect by name, for a path no dialect names: chat, responses,
    /// anthropic or gemini (beats --path)
    #[arg(long, value_name = "NAME", requires = "response")]
    pub dialect: Option<crate::engine::Dialect>,
    /// The response's status code [default: 200]
    #[arg(long, value_name = "CODE", requires = "response")]
    pub status: Option<u16>,
    /// Recordings checked in parallel [default: the number of CPUs]
    #[arg(long, value_name = "N")]
    pub jobs: Option<NonZeroUsize>,
    /// Exit 0 when the paths hold no recording at all (by default that is a usage error, exit
    /// 2: a CI step pointed at the wrong folder must not pass)
    #[arg(long)]
    pub allow_empty: bool,
    /// Largest input read, in bytes; larger files (and devices such as /dev/zero) are reported
    /// unreadable instead of filling memory
    #[arg(long, value_name = "BYTES", default_value_t = crate::interop::files::DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
}

impl CheckArgs {
    /// The engine's default limits with the given severity overrides.
    pub fn engine_config(&self) -> Arc<EngineConfig> {
        let mut config = EngineConfig::default();
        if let Some(severity) = &self.severity {
            config.severity = severity.clone();
        }
        Arc::new(config)
    }
}

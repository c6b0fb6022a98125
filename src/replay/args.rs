//! The flags of `tooltap replay`, and their validation into [`ReplaySettings`].
//!
//! Input: `argv` through clap (the `Replay` variant of `cli::Command`). Output: settings the
//! binary hands to the replay server, or an [`ArgsError`] naming the flag. No environment
//! variables or config file: a replay server is started by a test suite with its flags in view.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::matching::{BadPointer, MatchRules};
use super::{DEFAULT_MAX_REQUEST_BODY, OnMiss, Pace, ReplaySettings};
use crate::config::LogFormat;

#[derive(Debug, Args)]
#[command(
    after_help = "Requests match a recording on method, path and the JSON body compared \
                        with key order ignored; /user, /metadata, /seed and /stream_options are \
                        ignored by default. Several matching recordings are served in turn. \
                        See docs/replay.md."
)]
pub struct ReplayArgs {
    /// Directory of recordings (*.jsonl, read recursively; one unreadable file stops the start)
    #[arg(long, value_name = "DIR")]
    pub recordings: PathBuf,
    /// Address to listen on
    #[arg(long, value_name = "ADDR", default_value = super::DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// instant (every frame at once, each its own write), recorded (the original gaps), or a
    /// factor from 0 to 1000 applied to the recorded timing (0.1 = ten times faster)
    #[arg(long, value_name = "PACE", default_value = "instant")]
    pub pace: Pace,
    /// Also ignore this JSON pointer of the request body when matching (repeatable), e.g. /model
    #[arg(long = "ignore", value_name = "POINTER")]
    pub ignore: Vec<String>,
    /// Ignore /model when matching (test suites often read the model from the environment)
    #[arg(long)]
    pub ignore_model: bool,
    /// Do not ignore /user, /metadata, /seed and /stream_options by default
    #[arg(long)]
    pub no_default_ignores: bool,
    /// What a request no recording matches gets: a 404 replay_no_match error, or forwarded to
    /// --upstream through the inspection path
    #[arg(long, value_name = "WHAT", default_value = "error")]
    pub on_miss: MissArg,
    /// Upstream base URL for --on-miss forward, e.g. https://api.openai.com
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Append violations found in replayed exchanges to this JSON Lines file
    #[arg(long, value_name = "PATH")]
    pub violations: Option<PathBuf>,
    /// Per-rule severities for the inspection of replayed traffic, as for the proxy and check,
    /// e.g. finish_reason.stop_on_named_choice=error,delta.id_repeated=off
    #[arg(long, value_name = "RULE=LEVEL,...", value_parser = crate::engine::SeverityOverrides::parse_list)]
    pub severity: Option<crate::engine::SeverityOverrides>,
    /// Log output format [default: human]
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<LogFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MissArg {
    Error,
    Forward,
}

#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error("--ignore: {0}")]
    Pointer(#[from] BadPointer),
    #[error("--on-miss forward needs --upstream URL")]
    NoUpstream,
    #[error("--upstream is only used with --on-miss forward")]
    UnusedUpstream,
}

impl ReplayArgs {
    /// The validated settings and the log format.
    pub fn into_settings(self) -> Result<(ReplaySettings, LogFormat), ArgsError> {
        let ReplayArgs {
            recordings,
            listen,
            pace,
            mut ignore,
            ignore_model,
            no_default_ignores,
            on_miss,
            upstream,
            violations,
            severity,
            log_format,
        } = self;
        if ignore_model {
            ignore.push("/model".to_owned());
        }
        let rules = MatchRules::new(!no_default_ignores, &ignore)?;
        let on_miss = match (on_miss, upstream) {
            (MissArg::Error, None) => OnMiss::Error,
            (MissArg::Error, Some(_)) => return Err(ArgsError::UnusedUpstream),
            (MissArg::Forward, Some(upstream)) => OnMiss::Forward { upstream },
            (MissArg::Forward, None) => return Err(ArgsError::NoUpstream),
        };
        let settings = ReplaySettings {
            recordings,
            listen,
            pace,
            rules,
            on_miss,
            violations,
            severity: severity.unwrap_or_default(),
            max_request_body: DEFAULT_MAX_REQUEST_BODY,
        };
        Ok((settings, log_format.unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<(ReplaySettings, LogFormat), ArgsError> {
        let mut argv = vec!["tooltap", "replay", "--recordings", "recs"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Replay(args) => args.into_settings(),
            other => panic!("not replay: {other:?}"),
        }
    }

    #[test]
    fn defaults_are_instant_error_and_the_default_ignores() {
        let (settings, _) = parse(&[]).expect("valid");
        assert_eq!(settings.listen.to_string(), "127.0.0.1:8787");
        assert_eq!(settings.pace, Pace::Instant);
        assert_eq!(settings.on_miss, OnMiss::Error);
        assert_eq!(settings.rules, MatchRules::default());
    }

    #[test]
    fn ignores_pace_and_forwarding_are_read() {
        let (settings, _) = parse(&[
            "--ignore-model",
            "--ignore",
            "/temperature",
            "--no-default-ignores",
            "--pace",
            "0.25",
            "--on-miss",
            "forward",
            "--upstream",
            "http://127.0.0.1:9",
        ])
        .expect("valid");
        assert_eq!(settings.rules.ignored, ["/temperature", "/model"]);
        assert_eq!(settings.pace, Pace::Scaled(0.25));
        assert!(matches!(settings.on_miss, OnMiss::Forward { .. }));
    }

    #[test]
    fn inconsistent_flags_are_refused() {
        assert!(matches!(
            parse(&["--on-miss", "forward"]),
            Err(ArgsError::NoUpstream)
        ));
        assert!(matches!(
            parse(&["--upstream", "http://x"]),
            Err(ArgsError::UnusedUpstream)
        ));
        assert!(matches!(
            parse(&["--ignore", "model"]),
            Err(ArgsError::Pointer(_))
        ));
    }

    #[test]
    fn absurd_pace_factors_are_refused_at_start_naming_the_flag() {
        for factor in ["1e300", "inf", "NaN", "-1", "1001"] {
            let flag = format!("--pace={factor}");
            let argv = ["tooltap", "replay", "--recordings", "r", flag.as_str()];
            let error = Cli::try_parse_from(argv).expect_err(factor).to_string();
            assert!(error.contains("--pace"), "{factor}: {error}");
            assert!(error.contains("0 to 1000"), "{factor}: {error}");
        }
    }
}

//! The flags of `tooltap replay`, and their validation into [`ReplaySettings`].
//!
//! Input: `argv` through clap (the `Replay` variant of `cli::Command`). Output: settings the
//! binary hands to the replay server, or an [`ArgsError`] naming the flag. No environment
//! variables or config file: a replay server is started by a test suite with its flags in view.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::matching::{BadPointer, MatchRules, ToolCallIds};
use super::{DEFAULT_MAX_REQUEST_BODY, OnMiss, Pace, ReplaySettings};
use crate::config::LogFormat;

#[derive(Debug, Args)]
#[command(
    after_help = "Requests match a recording on method, path and the JSON body compared \
                        with key order ignored; /user, /metadata, /seed, /stream_options, /store, \
                        /prompt_cache_key and /safety_identifier are ignored by default. Several matching \
                        recordings are served in turn. \
                        See docs/replay.md."
)]
pub struct ReplayArgs {
    /// Directory of recordings (*.jsonl, and vcrpy cassettes and HAR files, see docs/interop.md;
    /// read recursively; one unreadable file stops the start), or s3://bucket/prefix (copied
    /// once at start)
    #[arg(long, value_name = "DIR")]
    pub recordings: PathBuf,
    /// Address to listen on
    #[arg(long, value_name = "ADDR", default_value = super::DEFAULT_LISTEN,
        value_parser = crate::accept_loop::listen_address)]
    pub listen: SocketAddr,
    /// instant (every frame at once, each its own write), recorded (the original gaps), or a
    /// factor from 0 to 1000 applied to the recorded timing (0.1 = ten times faster)
    #[arg(long, value_name = "PACE", default_value = "instant")]
    pub pace: Pace,
    /// Also ignore this JSON pointer of the request body when matching (repeatable), e.g. /model;
    /// `*` stands for every array index or key at its level: /messages/*/tool_calls/*/id
    #[arg(long = "ignore", value_name = "POINTER")]
    pub ignore: Vec<String>,
    /// strict: tool-call ids must equal the recorded ones; loose: ids are renamed by order of
    /// first appearance on both sides, so ids a framework invents per run still match
    #[arg(long, value_name = "HOW", default_value = "strict")]
    pub match_tool_call_ids: ToolCallIds,
    /// Ignore /model when matching (test suites often read the model from the environment)
    #[arg(long)]
    pub ignore_model: bool,
    /// Do not ignore /user, /metadata, /seed, /stream_options, /store, /prompt_cache_key and
    /// /safety_identifier by default
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
    /// Serve every recording with these quirks applied, in order (`tooltap quirks` lists them),
    /// e.g. args-as-object or index-all-zero,done-missing
    #[arg(long, value_name = "ID[,ID...]")]
    pub quirk: Option<String>,
    /// Exit non-zero at the end when any recording was never used (a CI gate); the unused ones
    /// are logged by cassette, and served live on GET /__tooltap/usage
    #[arg(long)]
    pub fail_on_unused: bool,
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
    /// Not `#[from]`: the message is complete, a `source` would print it twice.
    #[error("--quirk: {0}")]
    Quirk(crate::quirk::inject::InjectError),
}

impl ReplayArgs {
    /// The validated settings and the log format.
    pub fn into_settings(self) -> Result<(ReplaySettings, LogFormat), ArgsError> {
        let ReplayArgs {
            recordings,
            listen,
            pace,
            mut ignore,
            match_tool_call_ids,
            ignore_model,
            no_default_ignores,
            on_miss,
            upstream,
            violations,
            severity,
            log_format,
            quirk,
            fail_on_unused,
        } = self;
        let quirks = match quirk {
            Some(list) => crate::quirk::parse_quirk_list(&list).map_err(ArgsError::Quirk)?,
            None => Vec::new(),
        };
        if ignore_model {
            ignore.push("/model".to_owned());
        }
        let rules =
            MatchRules::new(!no_default_ignores, &ignore)?.with_tool_call_ids(match_tool_call_ids);
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
            quirks,
            fail_on_unused,
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
        assert_eq!(settings.rules.ignored(), ["/temperature", "/model"]);
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
        assert!(matches!(
            parse(&["--quirk", "args-as-object,nope"]),
            Err(ArgsError::Quirk(_))
        ));
        let (settings, _) = parse(&["--quirk", "args-as-object,done-missing"]).expect("valid");
        assert_eq!(settings.quirks.len(), 2);
    }

    #[test]
    fn a_listen_value_that_is_not_an_address_says_an_address_is_wanted() {
        for (value, example) in [
            ("4640", "127.0.0.1:4640"),
            ("localhost:1", "127.0.0.1:8787"),
        ] {
            let flag = format!("--listen={value}");
            let argv = ["tooltap", "replay", "--recordings", "r", flag.as_str()];
            let error = Cli::try_parse_from(argv).expect_err(value).to_string();
            assert!(error.contains("--listen"), "{value}: {error}");
            assert!(error.contains("an address is wanted"), "{value}: {error}");
            assert!(error.contains(example), "{value}: {error}");
        }
        let (settings, _) = parse(&["--listen", "[::1]:0"]).expect("an address");
        assert_eq!(settings.listen.to_string(), "[::1]:0");
    }

    #[test]
    fn tool_call_ids_are_strict_unless_loose_is_asked_for() {
        let (settings, _) = parse(&[]).expect("valid");
        assert_eq!(settings.rules.tool_call_ids, ToolCallIds::Strict);
        let (settings, _) = parse(&["--match-tool-call-ids", "loose"]).expect("valid");
        assert_eq!(settings.rules.tool_call_ids, ToolCallIds::Loose);
        let (settings, _) = parse(&["--ignore", "/messages/*/tool_calls/*/id"]).expect("valid");
        assert!(
            settings
                .rules
                .ignored()
                .contains(&"/messages/*/tool_calls/*/id".to_owned())
        );
        let error = parse(&["--ignore", "/a*b"]).expect_err("glob inside a token");
        assert!(error.to_string().starts_with("--ignore: "), "{error}");
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

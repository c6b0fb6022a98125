//! `tooltap replay`: serve recordings with their exact fragment boundaries, as test fixtures.
//!
//! Input: a directory of version-1 recordings (`src/record/`), read once at start-up, and
//! [`ReplaySettings`] from the command line (or a test). Output: an HTTP server (HTTP/1.1 and
//! h2c) that answers each request with the recording that matches it — recorded status, cleaned
//! headers, and the recorded body frames one write each, paced as asked — while every exchange
//! goes through the same tee and inspector task as the proxy, so a fixture's violations show in
//! the logs, metrics and the violations file.
//!
//! ```text
//! request ─► service ─► library { matching } ─► respond (head) + body (paced frames) ─► tee ─► client
//!                  └─ miss ─► 404 replay_no_match | capture (forward upstream)   └─► inspect
//! ```
//!
//! [`matching`] is pure (canonical JSON, ignored pointers, differences); [`library`] loads and
//! indexes; [`body`] paces and frames; [`respond`] builds heads and errors; [`service`] answers
//! one request; [`capture`] forwards misses and [`remember`] keeps them for replay; [`admin`]
//! resets turns and reports usage; [`server`] accepts connections; [`args`] is the CLI.

pub mod admin;
pub mod args;
pub mod body;
pub mod capture;
pub mod library;
pub mod matching;
pub mod mcp;
pub mod quirks;
pub mod remember;
pub mod respond;
pub mod server;
pub mod service;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

pub use body::{Pace, ReplayBody};
pub use capture::{ForwardMiss, ForwardSetupError};
pub use library::{Candidate, Library, LoadError, Miss};
pub use matching::{MatchKey, MatchRules, ToolCallIds};
pub use server::{RunningReplay, serve};

use crate::config::inspect::{DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_MEMORY, DEFAULT_TAP_FRAMES};
use crate::engine::{EngineConfig, SchemaCache, SeverityOverrides};
use crate::inspect::{Inspection, InspectionParts};
use crate::metrics::Metrics;
use crate::proxy::admission::Admission;
use crate::record::{RecordMode, Recorder, RecorderConfig};
use crate::violations_file::ViolationsFile;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// Request bodies are read whole to be matched; larger ones are refused with 413.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 16 * 1024 * 1024;

/// What to do with a request no recording matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnMiss {
    /// Answer 404 `replay_no_match` (the default: fixtures must be complete).
    Error,
    /// Forward it to this upstream base URL through the inspection path.
    Forward { upstream: String },
}

/// Everything a replay server needs, validated.
#[derive(Debug, Clone)]
pub struct ReplaySettings {
    pub recordings: PathBuf,
    pub listen: SocketAddr,
    pub pace: Pace,
    pub rules: MatchRules,
    pub on_miss: OnMiss,
    /// Where violation lines go (the proxy's violations-file format); none when `None`.
    pub violations: Option<PathBuf>,
    /// Per-rule severities for the inspection of replayed traffic.
    pub severity: SeverityOverrides,
    pub max_request_body: usize,
    /// Quirks applied to every replayed exchange (`--quirk`), in order; see [`crate::quirk`].
    pub quirks: Vec<crate::quirk::QuirkId>,
    /// Exit non-zero when a recording was never used (`--fail-on-unused`); read by the binary.
    pub fail_on_unused: bool,
}

impl ReplaySettings {
    /// Defaults for `recordings`: instant pace, default ignores, 404 on a miss, port 8787.
    pub fn new(recordings: PathBuf) -> ReplaySettings {
        ReplaySettings {
            recordings,
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            pace: Pace::Instant,
            rules: MatchRules::default(),
            on_miss: OnMiss::Error,
            violations: None,
            severity: SeverityOverrides::default(),
            max_request_body: DEFAULT_MAX_REQUEST_BODY,
            quirks: Vec::new(),
            fail_on_unused: false,
        }
    }
}

/// Why a replay server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Forward(#[from] ForwardSetupError),
    #[error("cannot listen on {addr}: {cause}")]
    Bind {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error("the replay server task failed: {0}")]
    Task(tokio::task::JoinError),
}

/// Shared by every request of one replay server.
pub struct ReplayState {
    pub library: RwLock<Library>,
    pub pace: Pace,
    pub admission: Admission,
    pub metrics: Arc<Metrics>,
    pub forward: Option<ForwardMiss>,
    pub max_request_body: usize,
    pub quirks: Vec<crate::quirk::QuirkId>,
    /// How the recorder redacts request bodies: requests are matched as recorded, and the miss
    /// warning shows an unmatched body redacted.
    pub redactor: crate::redact::Redactor,
    /// True while accepting; false once shutdown began (`/readyz` answers 503 then).
    pub accepting: std::sync::atomic::AtomicBool,
    /// The MCP session ids this server mints (see [`mcp`]).
    pub mcp_sessions: mcp::Sessions,
}

impl ReplayState {
    /// Load the recordings and set up inspection (and forwarding). Call inside a Tokio runtime.
    pub fn new(settings: &ReplaySettings) -> Result<ReplayState, ReplayError> {
        let ReplaySettings {
            recordings,
            listen: _,
            pace,
            rules,
            on_miss,
            violations,
            severity,
            max_request_body,
            quirks,
            fail_on_unused: _,
        } = settings;
        let library = Library::load(recordings, rules.clone())?;
        let forward = match on_miss {
            OnMiss::Error => None,
            OnMiss::Forward { upstream } => Some(ForwardMiss::new(upstream)?),
        };
        // Credential-named fields are redacted as a recording's would be.
        let redactor = match &forward {
            Some(forward) => crate::redact::Redactor::new(&forward.config.record.redact),
            None => crate::redact::Redactor::default(),
        };
        let metrics = Arc::new(Metrics::default());
        let violations = violations
            .clone()
            .map(|path| ViolationsFile::spawn(path, "violations", metrics.clone()));
        // Only forwarded misses are recorded (replayed exchanges are fixtures already), into the
        // recordings directory itself, never pruned: the fixtures live there too.
        let recorder = forward.as_ref().map(|_| {
            let config = RecorderConfig {
                dir: recordings.clone(),
                mode: RecordMode::All,
                max_total_bytes: None,
                max_files: None,
                ..RecorderConfig::default()
            };
            Recorder::spawn(config, metrics.clone())
        });
        // Replay has no `[inspect]` settings: its own severity and request-body cap, defaults
        // for the rest.
        let inspection = Arc::new(Inspection::new(InspectionParts {
            engine: EngineConfig {
                severity: severity.clone(),
                ..EngineConfig::default()
            },
            schemas: Arc::new(SchemaCache::default()),
            metrics: metrics.clone(),
            violations,
            recorder,
            hold: crate::inspect::HoldSettings::in_memory(
                RecorderConfig::default().max_bytes_per_recording,
            ),
            max_request_body: *max_request_body,
            max_memory: DEFAULT_MAX_MEMORY,
            mcp: crate::config::mcp_state::McpStateSettings::default(),
            // As the recorder of forwarded misses names credentials.
            credentials: crate::redact::Redactor::new(&RecorderConfig::default().redact),
            otlp: None,
        }));
        Ok(ReplayState {
            library: RwLock::new(library),
            pace: *pace,
            // The proxy's wiring and defaults: the same cap on concurrent inspections and tap.
            admission: Admission::with(inspection, DEFAULT_MAX_CONCURRENT, DEFAULT_TAP_FRAMES),
            metrics,
            forward,
            max_request_body: *max_request_body,
            quirks: quirks.clone(),
            redactor,
            accepting: std::sync::atomic::AtomicBool::new(true),
            mcp_sessions: mcp::Sessions::default(),
        })
    }
}

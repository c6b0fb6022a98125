//! tooltap: a recording HTTP proxy that checks OpenAI-compatible function-calling traffic.
//!
//! Data flows one way:
//!
//! ```text
//! accept → service → forward → tee ──► client   (bytes unchanged, no delay)
//!                               └────► inspect → engine { framing → reassemble → contract } → report
//! ```
//!
//! * [`engine`] is the sans-IO analysis core: it imports neither hyper nor tokio, is fed bytes in
//!   arbitrary chunks and returns values (reassembled messages and [`engine::Violation`]s). The
//!   live proxy, the offline checker and the replayer all drive it.
//! * [`config`] (with [`route`]), [`accept`], [`service`], [`exchange`], [`forward`], [`error`]
//!   and [`tls`] make the transparent proxy; [`cli`] and [`shutdown`] serve the binary.
//! * [`replay`] serves [`record`]ings back as fixtures, through the same tee and inspector.
//! * [`tee`], [`inspect`], [`metrics`], [`admin`] and [`jsonl_sink`] watch the traffic: a tee
//!   copies each frame to an inspector task that feeds the engine and reports.
//! * [`record`] writes exchanges to disk as replayable fragment sequences (redacted first);
//!   [`check`] re-judges recordings offline.

pub mod accept;
pub mod admin;
pub mod check;
pub mod cli;
pub mod config;
pub mod enforce;
pub mod engine;
pub mod error;
pub mod exchange;
pub mod forward;
pub mod inject;
pub mod inspect;
pub mod jsonl_sink;
pub mod listen;
pub mod metrics;
pub mod quirk;
pub mod record;
pub mod redact;
pub mod replay;
pub mod report;
pub mod route;
pub mod service;
pub mod shutdown;
pub mod tee;
pub mod tls;
pub mod watch;

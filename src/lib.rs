//! tooltap: a recording HTTP proxy that checks OpenAI-compatible function-calling traffic
//! (Chat Completions, the Responses API and Anthropic Messages).
//!
//! Data flows one way:
//!
//! ```text
//! accept_loop → proxy { server → service → forward } → tap::tee ──► client   (bytes unchanged, no delay)
//!                                                             └─────► inspect → engine { framing → reassemble → contract } → report
//! ```
//!
//! * [`proxy`] is the path a request takes, in order, configured by [`config`]; [`cli`] serves
//!   the binary. The leaves it shares with the admin listener, replay, recording and inspection
//!   are rooms of their own ([`accept_loop`], [`tap`], [`route`], [`tls`]...), so no room
//!   imports another that imports it back.
//! * [`engine`] is the sans-IO analysis core: it imports neither hyper nor tokio, is fed bytes in
//!   arbitrary chunks and returns values (reassembled messages and [`engine::Violation`]s). The
//!   live proxy, the offline checker and the replayer all drive it.
//! * [`inspect`] feeds the engine what the proxy's taps copy and reports: [`metrics`] (served by
//!   [`admin`]), log lines and the violations file ([`violations_file`]).
//! * [`record`] writes exchanges to disk as replayable fragment sequences, [`redact`]ed first;
//!   [`check`] re-judges recordings offline, [`replay`] serves them back as fixtures through the
//!   same taps and inspector, [`report`] shows them; [`quirk`] breaks the contract on purpose.

// In flow order (rustfmt.toml: reorder_modules = false).
// Configuration, and the proxy path a request takes.
pub mod config;
// Leaves of the client path that the proxy shares with the admin listener, replay, recording
// and inspection.
pub mod route;
pub mod tls;
pub mod upstream;
pub mod read_cap;
pub mod accept_loop;
pub mod answer;
pub mod tap;
pub mod proxy;
// The sans-IO analysis core, and the inspector that feeds it live traffic.
pub mod engine;
pub mod inspect;
// What inspection leaves behind: credentials removed, recordings, the violations file, metrics.
pub mod redact;
pub mod record;
pub mod writer_thread;
pub mod violations_file;
pub mod metrics;
pub mod otlp;
pub mod admin;
// Offline: re-judging, replaying and showing recordings; quirks on purpose.
pub mod check;
pub mod replay;
pub mod report;
pub mod interop;
pub mod quirk;
// The command line.
pub mod cli;

// The unit tests' temporary folders.
#[cfg(test)]
mod test_dir;

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

pub mod accept;
pub mod cli;
pub mod config;
pub mod engine;
pub mod error;
pub mod exchange;
pub mod forward;
pub mod route;
pub mod service;
pub mod shutdown;
pub mod tls;

//! Framing: turns response body bytes into documents the contract can judge.
//!
//! [`sse`] splits `text/event-stream` bodies into events incrementally; [`json`] collects a
//! buffered body. Both are bounded and do no I/O. Input comes from the decoder in
//! [`crate::engine::decode`]; output goes to the dialect ([`crate::engine::dialect`]).

pub mod json;
pub mod sse;

pub use json::{BodyTooLarge, JsonFramer};
pub use sse::{LineTooLong, SseEvent, SseFramer};

//! Framing: turns response body bytes into documents the contract can judge.
//!
//! [`sse`] splits `text/event-stream` bodies into events incrementally; [`json_array`] splits a
//! streamed top-level JSON array into its elements incrementally; [`json`] collects a buffered
//! body. All are bounded and do no I/O. Input comes from the decoder in
//! [`crate::engine::decode`]; output goes to the dialect ([`crate::engine::dialect`]).

pub mod json;
pub mod json_array;
pub mod sse;

pub use json::{BodyTooLarge, JsonFramer};
pub use json_array::{ArrayEnd, ElementTooLarge, JsonArrayFramer};
pub use sse::{LineTooLong, SseEvent, SseFramer};

//! The proxy path, in the order a request meets it: the listener's accept loop ([`accept_loop`]:
//! connection caps, header-read timeout, EMFILE back-off), sockets whose reads are capped small on
//! both sides ([`read_cap`]: a late reader must not grow a buffer), the server that runs tooltap
//! on it ([`server`]), the per-request service ([`service`]) with its exchange identity
//! ([`exchange`]) and route ([`route`]), forwarding upstream ([`forward`] over tooltap's own
//! pooled client [`upstream`], [`tls`]), the taps that
//! copy each body to the inspector without delaying it ([`taps`] wires them, [`tee`] is the body
//! wrapper, [`detached`] copies the heads a recording keeps), enforce mode ([`enforce`]), live
//! quirk injection ([`inject`]), tooltap's own error responses ([`error`]) and graceful drain
//! ([`shutdown`]).
//!
//! Input: client connections; output: the upstream's bytes, unchanged and undelayed, plus one
//! inspection per exchange handed to [`crate::inspect`].

pub mod accept_loop;
pub mod read_cap;
pub mod server;
pub mod service;
pub mod exchange;
pub mod route;
pub mod forward;
pub mod upstream;
pub mod tls;
pub mod taps;
pub mod detached;
pub mod tee;
pub mod enforce;
pub mod inject;
pub mod error;
pub mod shutdown;

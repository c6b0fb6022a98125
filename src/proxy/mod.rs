//! The proxy path, in the order a request meets it: the server that runs tooltap on the shared
//! accept loop ([`server`] on [`crate::accept_loop`], over [`crate::read_cap`]'s sockets), the
//! per-request service ([`service`]) with its exchange identity ([`exchange`]) and route
//! ([`crate::route`]), forwarding upstream ([`forward`] over tooltap's own pooled client
//! [`crate::upstream`], [`crate::tls`]), the taps that copy each body to the inspector without delaying
//! it ([`admission`] wires them; [`crate::tap`] holds the body wrapper and what it hands inspection),
//! enforce mode ([`enforce`]), live quirk injection ([`inject`]), tooltap's own error responses
//! ([`error`], written by [`crate::answer`]) and graceful drain ([`shutdown`]).
//!
//! Input: client connections; output: the upstream's bytes, unchanged and undelayed, plus one
//! inspection per exchange handed to [`crate::inspect`].

pub mod server;
pub mod service;
pub mod exchange;
pub mod forward;
pub mod admission;
pub mod enforce;
pub mod inject;
pub mod error;
pub mod shutdown;

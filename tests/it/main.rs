//! tooltap's integration tests: one binary, real servers on ephemeral loopback ports, the proxy
//! started in-process through the library, a timeout on every network await.
//!
//! Modules, by what they prove: `passthrough` (bytes, statuses, headers, routes unchanged), `protocol` (h2c, header timeout),
//! `streaming` (no buffering either way, disconnects propagate), `failures` (tooltap's own
//! errors), `tls` (verified HTTPS upstreams), `config` (layers and validation), `shutdown`
//! (graceful drain), `inspect` (live inspection: fixtures judged in flight, metrics, permits),
//! `responses_clients` (the openai Python and Node SDKs and openai-agents through tooltap against
//! aimock's Responses API),
//! `monitoring` (the Prometheus rules and Grafana queries run by a real Prometheus scraping tooltap), `inject`
//! (`--inject`: quirks on live responses, judged as the client got them),
//! `bench` (an ignored side-by-side throughput figure).

// Test and bench code may stop loudly: the deny lints in Cargo.toml guard the product code.
#![allow(clippy::expect_used, clippy::panic, clippy::unreachable)]

mod bad_input;
mod bench;
mod binary;
mod broken_upstream;
mod budget;
mod config;
mod connections;
mod edges;
mod enforce;
mod enforce_record;
#[path = "../engine_support/mod.rs"]
mod engine_support;
mod failures;
mod faults;
mod inject;
mod inspect;
mod layout;
mod memory;
mod memory_rss;
mod monitoring;
mod passthrough;
mod protocol;
mod record;
mod redaction;
mod responses_clients;
mod sdk_endings;
mod shutdown;
mod soak;
mod streaming;
mod support;
mod tls;
mod two_processes;
mod verdicts;

//! tooltap's tests beyond unit tests, in ONE binary: real servers on ephemeral loopback ports,
//! tooltap in-process through the library or as the built binary, real clients, a timeout on
//! every network await. Each module opens with what it proves; they group by room:
//!
//! * The engine alone (sans-IO, no sockets): `engine_fixtures` (the fixture corpus and its
//!   expected verdicts), `engine_splits` and `engine_props` (any chunking gives the same verdict), `engine_stream_schema` (streamed and whole argument checks agree on the corpus),
//!   `engine_exchange`, `engine_docs` (docs/rules.md and `RuleId::ALL` agree; the engine imports
//!   no I/O), `robustness` (hostile bytes), `quirk_selfcheck` (each quirk trips its rule),
//!   `tree_shape` (rooms import one way; the docs anchors comments link to exist).
//! * The proxy: `passthrough`, `protocol`, `streaming`, `failures`, `tls`, `config`, `shutdown`,
//!   `connections`, `budget`, `memory`, `edges`, `broken_upstream`, `faults`, `bad_input`, `soak`.
//! * What it reports: `inspect`, `verdicts`, `enforce`, `enforce_record`, `enforce_status`,
//!   `inject`, `inject_marked`, `monitoring` (a real Prometheus scraping tooltap), `redaction`,
//!   `log_secrets`, `gemini_secrets` (Gemini's keys in every artefact), `gemini_enforce` (a
//!   refused JSON-array stream stays a valid array), `record`, `layout`, `two_processes`.
//! * Recordings offline: `record_writer`, `record_read` (the format), `check_cli` (`tooltap
//!   check`), `replay` (`tooltap replay` with real clients), `report` (the HTML report in headless
//!   Chromium).
//! * Real SDKs end to end: `responses_clients`, `anthropic_clients` (the anthropic Python and
//!   Node SDKs against aimock's Messages API, observe, replay and enforce), `gemini_clients` (the
//!   google-genai Python and @google/genai Node SDKs against aimock's Gemini API, direct, through
//!   tooltap and its replay), `ollama_clients` (the `ollama` Python client against aimock's `/api/chat`,
//!   direct, through tooltap and its replay), `bedrock_clients` (boto3's `bedrock-runtime` client
//!   against aimock's Converse API, SigV4 and Bearer, direct, through tooltap and its replay),
//!   `sdk_endings`, the clients in `replay`, and `mcp_acceptance` (the Python and TypeScript MCP
//!   SDKs' servers and clients, the OpenAI Agents SDK and the MCP conformance suite, direct and
//!   through the tooltap binary).
//! * Deployment: `image` (the container image `scripts/image` builds, run with runc; the
//!   Dockerfile agrees with it), `kubernetes` (the manifests built, schema-validated, and their
//!   probes and grace period checked).
//! * `bench`: an ignored side-by-side throughput figure (performance lives in `bench/run`).
//!
//! Shared helpers: `support` (upstreams, the proxy harness, clients) and `engine_support` (the
//! fixture corpus and the engine driver).

// Test and bench code may stop loudly: the deny lints in Cargo.toml guard the product code.
#![allow(clippy::expect_used, clippy::panic, clippy::unreachable)]

mod anthropic_clients;
mod bad_input;
mod bedrock_clients;
mod bench;
mod binary;
mod broken_upstream;
mod budget;
mod budget_grammar;
mod check_cli;
mod config;
mod connections;
mod edges;
mod enforce;
mod enforce_record;
mod enforce_status;
mod engine_docs;
mod engine_exchange;
mod engine_fixtures;
mod engine_huge_arguments;
mod engine_props;
mod engine_splits;
mod engine_stream_schema;
mod engine_support;
mod failures;
mod gemini_clients;
mod ollama_clients;
mod faults;
mod gemini_enforce;
mod gemini_secrets;
mod image;
mod inject;
mod inject_bedrock;
mod inject_marked;
mod inspect;
mod kubernetes;
mod interop;
mod layout;
mod legacy_clients;
mod log_secrets;
mod mcp_acceptance;
mod mcp_conversation;
mod mcp_conversation_fixtures;
mod memory;
mod memory_rss;
mod monitoring;
mod object_storage;
mod otlp;
mod packages;
mod passthrough;
mod protocol;
mod quirk_selfcheck;
mod record;
mod record_read;
mod record_writer;
mod redaction;
mod replay;
mod report;
mod responses_clients;
mod robustness;
mod route_dialect;
mod sdk_endings;
mod shutdown;
mod soak;
mod stopping;
mod streaming;
mod support;
mod tls;
mod tree_shape;
mod two_processes;
mod verdict_board;
mod upstream_pool;
mod verdicts;

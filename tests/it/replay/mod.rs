//! `tooltap replay` integration tests: recordings written to temporary directories (or the
//! bundled `recordings/examples/`), the replay server started in-process on an ephemeral port,
//! real clients (a raw hyper client, the seed's vitest suite, the openai Python SDK), a timeout on
//! every network await.
//!
//! Modules, by what they prove: `cassettes` (per-test recordings: the `x-tooltap-cassette`
//! header through the real binary and the openai SDK), `usage` (per-cassette turns, the reset and
//! usage endpoints, `--fail-on-unused`), `pydantic_ai` (the agent-loop acceptance with a real
//! framework whose tool-call ids change per run), `agent_loop` (tool-call ids invented per run: the miss message,
//! `--match-tool-call-ids loose`, wildcard ignores), `frames` (byte-identical frames with the recorded boundaries,
//! headers), `pacing` (recorded gaps and factors), `matching` (misses, turns, ignored fields),
//! `inspection` (violations from replayed traffic reach the violations file), `examples` (the
//! bundled recordings parse and the engine judges them as documented), `forward` (misses sent
//! upstream), `clients` (the seed suite and the Python SDK against the examples), `quirks` (`--quirk`: headers,
//! the seed suite failing on its compatibility line, what the Python SDK does with a few quirks).

mod agent_loop;
pub mod cassettes;
mod clients;
mod examples;
mod forward;
mod frames;
mod gemini;
mod inspection;
mod layout;
mod matching;
mod pacing;
mod quirks;
mod redaction;
mod pydantic_ai;
pub mod support;
pub mod usage;

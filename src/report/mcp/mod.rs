//! MCP conversations in the report: the exchanges of one MCP conversation gathered, its tool
//! catalogue first, then its calls on a timeline with the violating messages marked.
//!
//! Input: each shown MCP recording (dialect `mcp`) with its exchange id and the rules its
//! re-judging reported, in any order. Output: [`ConversationView`]s, serialized into the page
//! (the page's script only lays them out). A conversation is keyed as the inspector keys it:
//! the upstream and the `Mcp-Session-Id` (the request's, or for `initialize` the one the
//! answer minted), else the upstream and the credential digest (stateless servers, 2026-07-28),
//! else the upstream alone. Exchanges are ordered by arrival (`started`, then the number of the
//! exchange id, which counts request heads as they arrive). The catalogue is the last complete
//! `tools/list` walk (pages accumulate until one without `nextCursor`), else the pages seen,
//! marked incomplete. Bounded: at most [`bound::MAX_LISTED`] calls and tools per conversation
//! (the rest counted), and the catalogues' schemas of the whole page share [`CATALOG_SHARE`]
//! times `--max-shown-bytes` (a schema past it is cut, with the cut marker); the conversations
//! are charged to the page budget (`--max-page-bytes`) after the exchanges, and past it their
//! tools and calls are counted, not listed ([`fit`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::bound::{self, MAX_LISTED};
use crate::quirk::sse::{Data, Event, event_ranges};
use crate::record::Recording;

/// The catalogues' schemas of one page take at most this many times `--max-shown-bytes`.
pub const CATALOG_SHARE: usize = 4;

/// One conversation as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConversationView {
    /// What keys it: `session <id>`, `credential <digest>` or `no session`.
    pub key: String,
    pub upstream: String,
    /// The negotiated protocol version (the `initialize` result's), else the last
    /// `MCP-Protocol-Version` header seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub catalog: Vec<CatalogTool>,
    /// The catalogue came from a walk that reached a page without `nextCursor`.
    pub catalog_complete: bool,
    pub calls: Vec<CallView>,
    /// Calls and tools past [`MAX_LISTED`], counted, not listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub calls_not_listed: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub tools_not_listed: u64,
}

/// Which conversation a conversation rule's violation belongs to: its [`ConversationView`]'s
/// `key` and `upstream` (the page links the violation to that conversation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConversationMark {
    pub key: String,
    pub upstream: String,
}

/// One tool of the catalogue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogTool {
    pub name: String,
    /// The `inputSchema` as compact JSON (cut to the shown bytes).
    pub input_schema: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
}

/// One exchange of the conversation on its timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallView {
    /// The exchange id (the page links it to the exchange's detail).
    pub exchange: String,
    /// Milliseconds since the conversation's first exchange.
    pub t_ms: u64,
    pub http: String,
    pub status: u16,
    /// The JSON-RPC method (`None` for a `GET` stream, a `DELETE`, a client's response).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// `params.name` (`tools/call`) or `params.cursor` (`tools/list`), when sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub id: Value,
    /// What came back: `result`, `isError`, `error <code>: <message>`, `accepted`, `stream (n
    /// messages)`, `no body`.
    pub outcome: String,
    /// The rules its re-judging reported (the page marks the row).
    pub rules: Vec<String>,
    pub errors: usize,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What one recording adds to its conversation ([`Conversations::read`]).
#[derive(Debug)]
pub struct Entry {
    upstream: String,
    key: String,
    started: String,
    started_ms: u64,
    arrival: u64,
    call: CallView,
    version: Option<String>,
    /// A `tools/list` page: (sent a cursor, its tools, has a `nextCursor`).
    page: Option<(bool, Vec<Value>, bool)>,
}

impl Entry {
    /// The conversation this exchange belongs to.
    pub fn mark(&self) -> ConversationMark {
        ConversationMark {
            key: self.key.clone(),
            upstream: self.upstream.clone(),
        }
    }

    /// Adds a conversation rule's violation to the exchange's row.
    pub fn add_rule(&mut self, rule: &str, error: bool) {
        self.call.rules.push(rule.to_owned());
        self.call.errors += usize::from(error);
    }
}

/// Gathers the MCP exchanges of one report.
#[derive(Debug, Default)]
pub struct Conversations {
    by_key: BTreeMap<(String, String), Vec<Entry>>,
    max_shown: usize,
}

impl Conversations {
    pub fn new(max_shown: usize) -> Conversations {
        Conversations {
            by_key: BTreeMap::new(),
            max_shown,
        }
    }

    /// Adds one MCP recording; `rules` and `errors` are its re-judged violations.
    pub fn add(&mut self, recording: &Recording, rules: Vec<String>, errors: usize) {
        self.push(Conversations::read(recording, rules, errors));
    }

    /// Adds what [`Conversations::read`] took from a recording.
    pub fn push(&mut self, entry: Entry) {
        self.by_key
            .entry((entry.upstream.clone(), entry.key.clone()))
            .or_default()
            .push(entry);
    }

    /// What one MCP recording adds, read while the recording is at hand.
    pub fn read(recording: &Recording, rules: Vec<String>, errors: usize) -> Entry {
        let meta = &recording.meta;
        let request = meta.request.body.to_value();
        let header = |headers: &[(String, String)], name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let session = header(&meta.request.headers, "mcp-session-id")
            .or_else(|| header(&meta.response.headers, "mcp-session-id"));
        let key = match (session, &meta.credential) {
            (Some(session), _) => format!("session {session}"),
            (None, Some(digest)) => format!("credential {digest}"),
            (None, None) => "no session".to_owned(),
        };
        let messages = response_messages(recording);
        let method = request
            .as_ref()
            .and_then(|r| r.get("method"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = request
            .as_ref()
            .and_then(|r| r.get("id"))
            .cloned()
            .unwrap_or(Value::Null);
        let answer = messages.iter().find(|m| {
            (m.get("result").is_some() || m.get("error").is_some()) && m.get("method").is_none()
        });
        let param = |name: &str| {
            request
                .as_ref()
                .and_then(|r| r.pointer(&format!("/params/{name}")))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let name = param("name").or_else(|| param("cursor"));
        let version = answer
            .and_then(|a| a.pointer("/result/protocolVersion"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| header(&meta.request.headers, "mcp-protocol-version"));
        let page = match (method.as_deref(), answer.and_then(|a| a.get("result"))) {
            (Some("tools/list"), Some(result)) => Some((
                param("cursor").is_some(),
                result
                    .get("tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                result.get("nextCursor").is_some_and(|c| !c.is_null()),
            )),
            _ => None,
        };
        let outcome = outcome(meta.response.status, &messages, answer);
        let started_ms = humantime::parse_rfc3339(&meta.started)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let arrival = meta
            .id
            .rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Entry {
            upstream: meta.upstream.clone(),
            key,
            started: meta.started.clone(),
            started_ms,
            arrival,
            call: CallView {
                exchange: meta.id.clone(),
                t_ms: 0,
                http: meta.method.clone(),
                status: meta.response.status,
                method,
                name,
                id,
                outcome,
                rules,
                errors,
            },
            version,
            page,
        }
    }

    /// The conversations, each in arrival order, in key order.
    pub fn finish(self) -> Vec<ConversationView> {
        let mut budget = bound::Shown::new(self.max_shown.saturating_mul(CATALOG_SHARE));
        self.by_key
            .into_iter()
            .map(|((upstream, key), mut entries)| {
                entries.sort_by(|a, b| {
                    (a.started_ms, &a.started, a.arrival).cmp(&(
                        b.started_ms,
                        &b.started,
                        b.arrival,
                    ))
                });
                conversation(upstream, key, entries, &mut budget)
            })
            .collect()
    }
}

fn conversation(
    upstream: String,
    key: String,
    entries: Vec<Entry>,
    budget: &mut bound::Shown,
) -> ConversationView {
    let first = entries.first().map_or(0, |e| e.started_ms);
    let mut version = None;
    let mut walk: Vec<Value> = Vec::new();
    let mut complete: Option<Vec<Value>> = None;
    let mut calls = Vec::new();
    let mut calls_not_listed = 0;
    for entry in entries {
        if entry.call.method.as_deref() == Some("initialize") || version.is_none() {
            version = entry.version.clone().or(version);
        }
        if let Some((continued, tools, more)) = entry.page {
            if !continued {
                walk.clear();
            }
            walk.extend(tools);
            if !more {
                complete = Some(std::mem::take(&mut walk));
            }
        }
        if calls.len() < MAX_LISTED {
            let mut call = entry.call;
            call.t_ms = entry.started_ms.saturating_sub(first);
            calls.push(call);
        } else {
            calls_not_listed += 1;
        }
    }
    let catalog_complete = complete.is_some();
    let tools = complete.unwrap_or(walk);
    let tools_not_listed = tools.len().saturating_sub(MAX_LISTED) as u64;
    let catalog = tools
        .iter()
        .take(MAX_LISTED)
        .map(|tool| CatalogTool {
            name: tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("(no name)")
                .to_owned(),
            input_schema: shown(tool.get("inputSchema").unwrap_or(&Value::Null), budget),
            output_schema: tool.get("outputSchema").map(|s| shown(s, budget)),
        })
        .collect();
    ConversationView {
        key,
        upstream,
        version,
        catalog,
        catalog_complete,
        calls,
        calls_not_listed,
        tools_not_listed,
    }
}

/// Room each conversation keeps for the counters [`fit`] may set after measuring it.
const COUNTERS: u64 = 64;

/// The conversations as they fit `left` bytes of the page budget (`--max-page-bytes`): tools and
/// calls past it are counted, not listed, as those past [`MAX_LISTED`] are. Returns the bytes
/// they take, which the caller charges to the page.
pub fn fit(views: &mut [ConversationView], left: u64) -> u64 {
    let mut used = 0u64;
    for view in views.iter_mut() {
        let catalog = std::mem::take(&mut view.catalog);
        let calls = std::mem::take(&mut view.calls);
        used += bound::json_size(view) + COUNTERS;
        keep_fitting(
            catalog,
            &mut used,
            left,
            &mut view.catalog,
            &mut view.tools_not_listed,
        );
        keep_fitting(
            calls,
            &mut used,
            left,
            &mut view.calls,
            &mut view.calls_not_listed,
        );
    }
    used
}

/// Moves into `kept` each of `items` whose JSON (and its comma) still fits `left` with `used`
/// already taken, charging it to `used`; counts the others in `not_listed`.
fn keep_fitting<T: Serialize>(
    items: Vec<T>,
    used: &mut u64,
    left: u64,
    kept: &mut Vec<T>,
    not_listed: &mut u64,
) {
    for item in items {
        let size = bound::json_size(&item) + 1;
        if *used + size <= left {
            *used += size;
            kept.push(item);
        } else {
            *not_listed += 1;
        }
    }
}

/// A schema as compact JSON, cut to what is left of the budget, with the cut marker.
fn shown(value: &Value, budget: &mut bound::Shown) -> String {
    let mut text = value.to_string();
    let cut = budget.text(&mut text);
    if cut > 0 {
        text.push_str(&bound::marker(cut));
    }
    text
}

/// The JSON-RPC messages of the response body: the document, or each event's data.
fn response_messages(recording: &Recording) -> Vec<Value> {
    let meta = &recording.meta;
    let encoded = meta.response.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("content-encoding") && !v.trim().eq_ignore_ascii_case("identity")
    });
    if encoded {
        return Vec::new();
    }
    let body: Vec<u8> = recording
        .frames
        .iter()
        .flat_map(|f| f.bytes.iter().copied())
        .take(bound::MAX_DECODED)
        .collect();
    let streamed = meta.response.headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("content-type")
            && v.to_ascii_lowercase().contains("text/event-stream")
    });
    if !streamed {
        return serde_json::from_slice::<Value>(&body).into_iter().collect();
    }
    event_ranges(&body, true)
        .into_iter()
        .filter_map(
            |(start, end)| match Event::parse(body[start..end].to_vec()).data {
                Data::Json(value) => Some(value),
                Data::Done | Data::Other => None,
            },
        )
        .collect()
}

fn outcome(status: u16, messages: &[Value], answer: Option<&Value>) -> String {
    if let Some(answer) = answer {
        if let Some(error) = answer.get("error") {
            let code = error.get("code").map_or_else(String::new, Value::to_string);
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            return format!("error {code}: {message}");
        }
        let is_error = answer.pointer("/result/isError") == Some(&Value::Bool(true));
        return if is_error { "isError" } else { "result" }.to_owned();
    }
    match (status, messages.len()) {
        (202, _) => "accepted".to_owned(),
        (_, 0) => "no body".to_owned(),
        (_, n) => format!("stream ({n} messages)"),
    }
}

#[cfg(test)]
mod tests;

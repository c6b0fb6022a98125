//! The data the page renders: one [`ExchangeView`] per recording, serialized to JSON.
//!
//! Input: a [`Recording`] and the engine's [`Report`] for it (re-judged by
//! `check::checked::engine_report`). Output: everything the page shows for one exchange,
//! already cut into fragments and pieces, so the page's script holds no dialect knowledge.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde_json::Value;

use super::bound::{MAX_LISTED, Shown};
use super::dialect::{self, PieceKind};
use super::pieces::{self, Fragment};
use crate::engine::{ChoiceOutcome, Completeness, Report, Violation};
use crate::record::{Outcome, RecordedFrame, Recording};

/// One exchange as the page sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ExchangeView {
    pub id: String,
    pub file: String,
    pub started: String,
    pub route: String,
    pub model: String,
    pub method: String,
    pub path: String,
    pub dialect: &'static str,
    /// The quirks `--inject` put into this response (the exchange line's `injected`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub injected: Vec<String>,
    pub status: u16,
    /// `"stream"` or `"buffered"` (what the response was, by its content type).
    pub mode: &'static str,
    /// How the recording says it ended; `"unfinished"` without an end line.
    pub outcome: &'static str,
    /// The engine's completeness state, e.g. `complete`, `truncated`, `not_inspected`.
    pub completeness: String,
    pub dropped_frames: u64,
    pub live_violations: Option<usize>,
    /// The request's `tools` (an index into [`ToolTable`]: most exchanges repeat a few tool
    /// lists) and `tool_choice`, exactly as recorded.
    pub tools: usize,
    pub tool_choice: Value,
    pub violations: Vec<ViolationView>,
    pub fragments: Vec<FragmentView>,
    pub frames: Vec<FrameView>,
    pub choices: Vec<ChoiceOutcome>,
    /// What the bounds left out of this exchange.
    #[serde(skip_serializing_if = "ExchangeCut::is_empty")]
    pub cut: ExchangeCut,
}

/// What the page does not show of one exchange, counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ExchangeCut {
    /// Bytes of decoded text (event data, bodies, piece texts) not shown.
    #[serde(skip_serializing_if = "is_zero")]
    pub decoded_bytes: u64,
    /// Bytes of raw frames not shown.
    #[serde(skip_serializing_if = "is_zero")]
    pub raw_bytes: u64,
    /// Fragments, and frames, past the most one exchange lists.
    #[serde(skip_serializing_if = "is_zero")]
    pub fragments: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub frames: u64,
    /// Why decoding or framing stopped before the end of the body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoding: Option<String>,
    /// The page budget was spent: fragments, frames and reassembled calls left out; the
    /// bytes they would have taken.
    #[serde(skip_serializing_if = "is_zero")]
    pub detail_bytes: u64,
}

impl ExchangeCut {
    pub fn is_empty(&self) -> bool {
        *self == ExchangeCut::default()
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A fragment as the page gets it: pieces as `[lane, kind, text, pointer index]` arrays, the
/// pointers interned (the same few pointers repeat in every exchange).
#[derive(Debug, Clone, Serialize)]
pub struct FragmentView {
    pub seq: u64,
    pub t_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub data: String,
    /// Bytes of `data` not shown.
    #[serde(skip_serializing_if = "is_zero")]
    pub cut: u64,
    pub pieces: Vec<(String, PieceKind, String, usize)>,
}

/// Distinct JSON values (tool lists, pointers), each stored once in the page, and the bytes
/// they take in it (so the page budget can charge an exchange for the entries it added).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct ToolTable {
    values: Vec<Value>,
    #[serde(skip)]
    index: std::collections::HashMap<String, usize>,
    #[serde(skip)]
    bytes: u64,
}

impl ToolTable {
    /// The index of `tools`, added when new.
    pub fn intern(&mut self, tools: Value) -> usize {
        let key = tools.to_string();
        if let Some(&at) = self.index.get(&key) {
            return at;
        }
        // Its JSON as the page writes it, and the comma before the next entry.
        self.bytes += super::bound::json_size(&tools) + 1;
        self.values.push(tools);
        self.index.insert(key, self.values.len() - 1);
        self.values.len() - 1
    }

    /// The string at `at` when it is one.
    pub fn str(&self, at: usize) -> Option<&str> {
        self.values.get(at).and_then(Value::as_str)
    }

    pub fn get(&self, at: usize) -> Option<&Value> {
        self.values.get(at)
    }

    /// How many distinct values it holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Bytes its values take in the page.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Forgets every value added after the first `len` (the entries of an exchange the page
    /// budget left out, which nothing else points to).
    pub fn truncate(&mut self, len: usize) {
        for value in self.values.drain(len.min(self.values.len())..) {
            self.index.remove(&value.to_string());
            self.bytes -= super::bound::json_size(&value) + 1;
        }
    }
}

/// A violation with its docs link.
#[derive(Debug, Clone, Serialize)]
pub struct ViolationView {
    #[serde(flatten)]
    pub violation: Violation,
    pub doc: String,
    /// The MCP conversation whose state found it (a conversation rule, judged across the
    /// exchanges of that conversation); `None` for a rule judged on this exchange alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<super::mcp::ConversationMark>,
}

/// One recorded frame, exactly as recorded.
#[derive(Debug, Clone, Serialize)]
pub struct FrameView {
    pub seq: u64,
    pub t_us: u64,
    /// The bytes as text when valid UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The bytes as base64 otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
    /// Bytes of the frame not shown (the exchange's allowance for raw bytes was spent).
    #[serde(skip_serializing_if = "is_zero")]
    pub cut: u64,
}

/// Builds the view of one recording, its decoded text and its raw frames each cut to
/// `max_shown` bytes.
pub fn view(
    recording: &Recording,
    report: &Report,
    docs_base: &str,
    max_shown: usize,
    tools: &mut ToolTable,
    pointers: &mut ToolTable,
) -> ExchangeView {
    let meta = &recording.meta;
    let header = |name: &str| {
        meta.response
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let content_type = header("content-type");
    let dialect = meta.dialect();
    let request_tree = meta.request.body.to_value();
    let request = request_tree.as_ref();
    let field = |name: &str| {
        request
            .and_then(|r| r.get(name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let is_sse = content_type.is_some_and(|t| t.trim_start().starts_with("text/event-stream"));
    let mut decoded = Shown::new(max_shown);
    let fragments = pieces::fragments(
        &recording.frames,
        content_type,
        header("content-encoding"),
        dialect::tables(dialect),
        &mut decoded,
    );
    let (fragments_not_listed, stopped) = (fragments.not_listed, fragments.stopped.clone());
    let mut raw = Shown::new(max_shown);
    let frames = frame_views(&recording.frames, &mut raw);
    ExchangeView {
        id: meta.id.clone(),
        started: meta.started.clone(),
        route: meta.route.clone(),
        model: report
            .request
            .model
            .clone()
            .unwrap_or_else(|| "unknown".into()),
        method: meta.method.clone(),
        path: meta.path.clone(),
        dialect: dialect.as_str(),
        status: meta.response.status,
        mode: if is_sse { "stream" } else { "buffered" },
        outcome: recording
            .end
            .as_ref()
            .map_or("unfinished", |end| outcome_str(end.outcome)),
        completeness: completeness_str(&report.completeness).to_string(),
        dropped_frames: recording.end.as_ref().map_or(0, |end| end.dropped_frames),
        live_violations: recording
            .end
            .as_ref()
            .filter(|_| crate::interop::has_live_verdict(recording))
            .map(|end| end.violations.len()),
        tools: tools.intern(field("tools")),
        tool_choice: field("tool_choice"),
        violations: report
            .violations
            .iter()
            .map(|v| ViolationView {
                doc: format!("{docs_base}{}", v.rule.docs_anchor()),
                violation: v.clone(),
                conversation: None,
            })
            .collect(),
        fragments: fragments
            .list
            .into_iter()
            .map(|f: Fragment| FragmentView {
                seq: f.seq,
                t_us: f.t_us,
                event: f.event,
                data: f.data,
                cut: f.cut,
                pieces: f
                    .pieces
                    .into_iter()
                    .map(|p| {
                        (
                            p.lane,
                            p.kind,
                            p.text,
                            pointers.intern(Value::String(p.ptr)),
                        )
                    })
                    .collect(),
            })
            .collect(),
        frames,
        choices: report.choices.clone(),
        file: recording.path.display().to_string(),
        injected: meta.injected_quirks(),
        cut: ExchangeCut {
            decoded_bytes: decoded.cut,
            raw_bytes: raw.cut,
            fragments: fragments_not_listed,
            frames: recording.frames.len().saturating_sub(MAX_LISTED) as u64,
            decoding: stopped,
            detail_bytes: 0,
        },
    }
}

/// The first [`MAX_LISTED`] frames, their bytes cut to what `raw` allows.
fn frame_views(frames: &[RecordedFrame], raw: &mut Shown) -> Vec<FrameView> {
    frames
        .iter()
        .take(MAX_LISTED)
        .map(|f| {
            let (text, base64, cut) = if std::str::from_utf8(&f.bytes).is_ok() {
                let (text, cut) = raw.lossy(&f.bytes);
                (Some(text), None, cut)
            } else {
                let (kept, cut) = raw.take(&f.bytes);
                (None, Some(BASE64.encode(kept)), cut)
            };
            FrameView {
                seq: f.seq,
                t_us: f.t_us,
                text,
                base64,
                cut,
            }
        })
        .collect()
}

fn outcome_str(outcome: Outcome) -> &'static str {
    outcome.as_str()
}

fn completeness_str(completeness: &Completeness) -> &'static str {
    match completeness {
        Completeness::Complete => "complete",
        Completeness::Partial => "truncated",
        Completeness::TooLarge { .. } => "too_large",
        Completeness::DecodeFailed { .. } => "decode_failed",
        Completeness::NotInspected => "not_inspected",
        Completeness::SchemaBudget { .. } => "schema_budget",
        Completeness::SchemaStreaming { .. } => "schema_streaming",
    }
}

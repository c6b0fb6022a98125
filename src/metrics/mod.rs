//! Prometheus metrics: a small hand-written registry of labelled counters and histograms, and
//! its rendering in the Prometheus text exposition format (served by the admin listener).
//!
//! Written by the service (one update per exchange, never from inside `poll_frame`) and by the
//! inspector tasks; read by the admin listener. Label values are bounded: model names are
//! sanitised and capped in length, and past [`MAX_MODELS`] distinct models new ones are counted
//! as `other`, so a client sending random model names cannot grow the registry without bound.
//! (The `metrics`/`metrics-exporter-prometheus` crates were considered: the exporter defaults to
//! a second rustls crypto provider, and what we need fits in this file.)

mod family;
pub mod upstream_pool;

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use family::{CounterVec, HistogramVec, lock};

/// Distinct model label values kept before new ones become `other`.
pub const MAX_MODELS: usize = 64;
/// Longest model label value kept; longer names are cut.
pub const MAX_LABEL_LEN: usize = 64;

/// Upper bounds (seconds) of the latency histograms: 50 µs to 60 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Upper bounds (seconds) of tooltap's own overhead: 1 µs to 10 ms.
const OVERHEAD_BUCKETS: &[f64] = &[
    0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
    0.0025, 0.01,
];

/// Every metric tooltap exports.
pub struct Metrics {
    requests: CounterVec,
    inspected: CounterVec,
    violations: CounterVec,
    incomplete: CounterVec,
    violations_not_listed: CounterVec,
    schema_cache_bytes: AtomicU64,
    /// Trips of the engine's work run on the inspector's own thread, and on the analysis pool.
    analysis_here: AtomicU64,
    analysis_pool: AtomicU64,
    recording_failures: CounterVec,
    recording_uploads: CounterVec,
    limit_hits: CounterVec,
    mcp_unjudged: CounterVec,
    upstream_ttfb: HistogramVec,
    stream_duration: HistogramVec,
    request_overhead: HistogramVec,
    frame_overhead: HistogramVec,
    frames_not_copied: CounterVec,
    upstream_pool: upstream_pool::PoolCounters,
    models: Mutex<BTreeSet<String>>,
    /// OpenTelemetry export (`[otlp]`): spans sent, dropped (by reason), failed requests and
    /// violation events left out of spans.
    otlp_exported: CounterVec,
    otlp_dropped: CounterVec,
    otlp_failures: CounterVec,
    otlp_events_dropped: CounterVec,
}

/// Why an exchange's inspection is incomplete: our own limits, never contract violations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncompleteReason {
    /// The tap was full: frames were dropped, the inspector saw a stream with a hole.
    Lossy,
    /// No inspection permit was free: the exchange was forwarded untapped.
    Skipped,
    /// The client went away before the end of the body.
    ReaderGone,
    /// A body exceeded an inspection bound.
    TooLarge,
    /// The upstream body failed mid-stream.
    UpstreamBroke,
    /// The analysis code itself failed (a panic in the inspector), caught and reported.
    InspectionFailed,
    /// Checking some tool call's arguments against its schema would have exceeded the schema
    /// budget (`inspect.schema_budget`, `inspect.schema_compile_bytes`): not checked.
    SchemaBudget,
    /// Some tool call's arguments were too large to hold and its schema needs a whole value
    /// past the streaming bound: that keyword was not judged.
    SchemaStreaming,
    /// What all inspections hold reached `inspect.max_memory`: forwarded uninspected (or its
    /// request body not held).
    MemoryBudget,
    /// The path matched `[inspect]` but neither the route's `dialect` nor the path names a
    /// dialect: forwarded uninspected (not judged, not recorded).
    DialectUnknown,
}

impl IncompleteReason {
    pub fn as_str(self) -> &'static str {
        match self {
            IncompleteReason::Lossy => "lossy",
            IncompleteReason::Skipped => "skipped",
            IncompleteReason::ReaderGone => "client_gone",
            IncompleteReason::TooLarge => "too_large",
            IncompleteReason::UpstreamBroke => "upstream_error",
            IncompleteReason::InspectionFailed => "inspection_failed",
            IncompleteReason::SchemaBudget => "schema_budget",
            IncompleteReason::SchemaStreaming => "schema_streaming",
            IncompleteReason::MemoryBudget => "memory_budget",
            IncompleteReason::DialectUnknown => "dialect_unknown",
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: CounterVec::new(
                "tooltap_requests_total",
                "Requests answered, by route and status.",
                &["route", "status"],
            ),
            inspected: CounterVec::new(
                "tooltap_exchanges_inspected_total",
                "Exchanges run through the contract engine.",
                &["route", "model", "stream", "dialect"],
            ),
            violations: CounterVec::new(
                "tooltap_violations_total",
                "Contract violations found, by rule id and severity.",
                &["route", "model", "rule", "severity", "dialect"],
            ),
            incomplete: CounterVec::new(
                "tooltap_inspection_incomplete_total",
                "Exchanges whose inspection was incomplete, by reason.",
                &["route", "reason"],
            ),
            violations_not_listed: CounterVec::new(
                "tooltap_violations_not_listed_total",
                "Violations past inspect.max_violations in one exchange: counted, not listed.",
                &["route"],
            ),
            schema_cache_bytes: AtomicU64::new(0),
            analysis_here: AtomicU64::new(0),
            analysis_pool: AtomicU64::new(0),
            recording_failures: CounterVec::new(
                "tooltap_recording_failures_total",
                "Failures writing the violations file or recordings (traffic is unaffected).",
                &["target"],
            ),
            recording_uploads: CounterVec::new(
                "tooltap_recording_uploads_total",
                "Recordings bound for object storage, by outcome: uploaded, renamed (its key was taken), spilled (left in the spool for a later rescan), failed (an attempt; the file waits in the spool), dropped (deleted past record.s3.max_spool_bytes).",
                &["outcome"],
            ),
            limit_hits: CounterVec::new(
                "tooltap_limit_hits_total",
                "Times a bound cut something off (connections refused or closed, files rotated or pruned, bodies timed out), by limit and scope.",
                &["limit", "scope"],
            ),
            mcp_unjudged: CounterVec::new(
                "tooltap_mcp_unjudged_total",
                "MCP exchanges on which a conversation rule stayed silent for want of state (no_catalog, catalog_too_large, catalog_expired, schema_budget).",
                &["route", "reason"],
            ),
            upstream_ttfb: HistogramVec::new(
                "tooltap_upstream_ttfb_seconds",
                "Time from sending the request upstream to its response head.",
                &["route"],
                LATENCY_BUCKETS,
            ),
            stream_duration: HistogramVec::new(
                "tooltap_response_duration_seconds",
                "Time from the response head to the end of its body.",
                &["route"],
                LATENCY_BUCKETS,
            ),
            request_overhead: HistogramVec::new(
                "tooltap_request_overhead_seconds",
                "Time spent in tooltap between accepting a request head and sending it upstream.",
                &["route"],
                OVERHEAD_BUCKETS,
            ),
            frame_overhead: HistogramVec::new(
                "tooltap_frame_overhead_seconds",
                "Mean time the tee adds to a response frame (copying it for inspection), one sample per exchange.",
                &["route"],
                OVERHEAD_BUCKETS,
            ),
            frames_not_copied: CounterVec::new(
                "tooltap_frames_not_copied_total",
                "Body frames forwarded without a copy for the inspector, once it needed no more of the body (its inspection stopped, at a bound or on a body it does not inspect, and no recording took more), by route and body (request, response).",
                &["route", "body"],
            ),
            upstream_pool: upstream_pool::PoolCounters::default(),
            models: Mutex::new(BTreeSet::new()),
            otlp_exported: CounterVec::new(
                "tooltap_otlp_spans_exported_total",
                "Exchange spans the OTLP collector accepted.",
                &[],
            ),
            otlp_dropped: CounterVec::new(
                "tooltap_otlp_spans_dropped_total",
                "Exchange spans not delivered, by reason: queue_full (otlp.max_queue), queue_bytes (otlp.max_queue_bytes), export_failed (the collector refused or could not be reached), exporter_gone.",
                &["reason"],
            ),
            otlp_failures: CounterVec::new(
                "tooltap_otlp_export_failures_total",
                "OTLP export requests that failed, by reason: status (a non-2xx answer), transport, timeout (otlp.timeout).",
                &["reason"],
            ),
            otlp_events_dropped: CounterVec::new(
                "tooltap_otlp_events_dropped_total",
                "Violation events left out of exchange spans (past otlp.max_events).",
                &[],
            ),
        }
    }
}

/// A character a model label keeps (the rest are dropped).
fn label_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._:/-@+".contains(c)
}

impl Metrics {
    /// A bounded label value for a model name (see the module doc). A name that is already a
    /// clean label (the common case) is looked up as it is and lent back: nothing is copied.
    pub fn model_label<'a>(&self, model: Option<&'a str>) -> Cow<'a, str> {
        let Some(model) = model else {
            return Cow::Borrowed("unknown");
        };
        let label: Cow<'a, str> = if model.len() <= MAX_LABEL_LEN && model.chars().all(label_char) {
            Cow::Borrowed(model)
        } else {
            Cow::Owned(
                model
                    .chars()
                    .filter(|c| label_char(*c))
                    .take(MAX_LABEL_LEN)
                    .collect(),
            )
        };
        if label.is_empty() {
            return Cow::Borrowed("unknown");
        }
        let mut models = lock(&self.models);
        if models.contains(label.as_ref()) {
            return label;
        }
        if models.len() < MAX_MODELS {
            models.insert(label.clone().into_owned());
            label
        } else {
            Cow::Borrowed("other")
        }
    }

    pub fn request(&self, route: &str, status: u16) {
        // StatusCode's digits are a static table: no allocation on the request path.
        match http::StatusCode::from_u16(status) {
            Ok(code) => self.requests.add(&[route, code.as_str()], 1),
            Err(_) => self.requests.add(&[route, &status.to_string()], 1),
        }
    }
    pub fn inspected(&self, route: &str, model: &str, stream: bool, dialect: &str) {
        let stream = if stream { "true" } else { "false" };
        self.inspected.add(&[route, model, stream, dialect], 1);
    }
    pub fn violation(&self, route: &str, model: &str, rule: &str, severity: &str, dialect: &str) {
        self.violations
            .add(&[route, model, rule, severity, dialect], 1);
    }
    pub fn incomplete(&self, route: &str, reason: IncompleteReason) {
        self.incomplete.add(&[route, reason.as_str()], 1);
    }
    pub fn violations_not_listed(&self, route: &str, count: u64) {
        self.violations_not_listed.add(&[route], count);
    }
    /// The schema cache's estimated size, sampled after each inspected exchange.
    pub fn schema_cache_bytes(&self, bytes: usize) {
        self.schema_cache_bytes
            .store(bytes as u64, Ordering::Relaxed);
    }
    /// One trip of an exchange's engine work: on the inspector's thread (`here`) or the pool.
    pub fn analysis_trip(&self, here: bool) {
        let counter = if here {
            &self.analysis_here
        } else {
            &self.analysis_pool
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
    pub fn recording_failure(&self, target: &str) {
        self.recording_failures.add(&[target], 1);
    }
    /// A recording bound for object storage: `outcome` as in the metric's help.
    pub fn recording_upload(&self, outcome: &str) {
        self.recording_uploads.add(&[outcome], 1);
    }
    /// A bound was hit: `limit` names it (docs/reliability.md), `scope` says where.
    pub fn limit_hit(&self, limit: &str, scope: &str) {
        self.limit_hits.add(&[limit, scope], 1);
    }
    /// `count` cuts of one bound at once (e.g. conversations evicted by one settlement).
    pub fn limit_hits(&self, limit: &str, scope: &str, count: u64) {
        if count > 0 {
            self.limit_hits.add(&[limit, scope], count);
        }
    }
    /// An MCP conversation rule stayed silent on an exchange: `reason` is an `Unjudged` id.
    pub fn mcp_unjudged(&self, route: &str, reason: &str) {
        self.mcp_unjudged.add(&[route, reason], 1);
    }
    pub fn upstream_ttfb(&self, route: &str, d: Duration) {
        self.upstream_ttfb.observe(&[route], d.as_secs_f64());
    }
    pub fn response_duration(&self, route: &str, d: Duration) {
        self.stream_duration.observe(&[route], d.as_secs_f64());
    }
    pub fn request_overhead(&self, route: &str, d: Duration) {
        self.request_overhead.observe(&[route], d.as_secs_f64());
    }
    pub fn frame_overhead(&self, route: &str, d: Duration) {
        self.frame_overhead.observe(&[route], d.as_secs_f64());
    }
    /// `count` frames of one exchange's `body` (`request`, `response`) that the tee forwarded
    /// without copying them, the inspector having asked for no more.
    pub fn frames_not_copied(&self, route: &str, body: &str, count: u64) {
        if count > 0 {
            self.frames_not_copied.add(&[route, body], count);
        }
    }
    pub fn otlp_spans_exported(&self, count: u64) {
        self.otlp_exported.add(&[], count);
    }
    pub fn otlp_spans_dropped(&self, reason: &str, count: u64) {
        self.otlp_dropped.add(&[reason], count);
    }
    pub fn otlp_export_failure(&self, reason: &str) {
        self.otlp_failures.add(&[reason], 1);
    }
    pub fn otlp_events_dropped(&self, count: u64) {
        if count > 0 {
            self.otlp_events_dropped.add(&[], count);
        }
    }
    /// The upstream client's connection counters (atomics the pools update).
    pub fn upstream_pool(&self) -> &upstream_pool::PoolCounters {
        &self.upstream_pool
    }

    /// The whole registry in the Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.requests.render(&mut out);
        self.inspected.render(&mut out);
        self.violations.render(&mut out);
        self.incomplete.render(&mut out);
        self.violations_not_listed.render(&mut out);
        out.push_str(
            "# HELP tooltap_schema_cache_bytes Estimated bytes held by compiled tool schemas.\n",
        );
        out.push_str("# TYPE tooltap_schema_cache_bytes gauge\n");
        out.push_str(&format!(
            "tooltap_schema_cache_bytes {}\n",
            self.schema_cache_bytes.load(Ordering::Relaxed)
        ));
        out.push_str(
            "# HELP tooltap_analysis_trips_total Trips of the contract engine's work, by the thread \
             that ran it: the inspector's own (small trips with cached, plain schemas) or the \
             analysis pool (also held recording frames left by a trip here whose spill append \
             must write).\n",
        );
        out.push_str("# TYPE tooltap_analysis_trips_total counter\n");
        for (thread, counter) in [
            ("inspector", &self.analysis_here),
            ("pool", &self.analysis_pool),
        ] {
            out.push_str(&format!(
                "tooltap_analysis_trips_total{{thread=\"{thread}\"}} {}\n",
                counter.load(Ordering::Relaxed)
            ));
        }
        self.recording_failures.render(&mut out);
        self.recording_uploads.render(&mut out);
        self.limit_hits.render(&mut out);
        self.mcp_unjudged.render(&mut out);
        self.upstream_ttfb.render(&mut out);
        self.stream_duration.render(&mut out);
        self.request_overhead.render(&mut out);
        self.frame_overhead.render(&mut out);
        self.frames_not_copied.render(&mut out);
        self.otlp_exported.render(&mut out);
        self.otlp_dropped.render(&mut out);
        self.otlp_failures.render(&mut out);
        self.otlp_events_dropped.render(&mut out);
        self.render_upstream_pool(&mut out);
        out
    }

    fn render_upstream_pool(&self, out: &mut String) {
        use std::fmt::Write as _;
        use upstream_pool::Closed;
        let pool = &self.upstream_pool;
        for (name, kind, help, value) in [
            (
                "tooltap_upstream_connections_opened_total",
                "counter",
                "Upstream connections opened.",
                &pool.opened,
            ),
            (
                "tooltap_upstream_connections_reused_total",
                "counter",
                "Requests sent on a pooled upstream connection (an idle HTTP/1.1 one, or the shared HTTP/2 one).",
                &pool.reused,
            ),
            (
                "tooltap_upstream_connections_idle",
                "gauge",
                "Idle upstream connections held in the pools.",
                &pool.idle,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        let name = "tooltap_upstream_connections_closed_total";
        let _ = writeln!(
            out,
            "# HELP {name} Idle upstream connections the pools closed, by reason (idle_timeout, idle_cap, stale: closed by the upstream)."
        );
        let _ = writeln!(out, "# TYPE {name} counter");
        for (why, value) in Closed::ALL.iter().zip(&pool.closed) {
            let _ = writeln!(
                out,
                "{name}{{reason=\"{}\"}} {}",
                why.as_str(),
                value.load(Ordering::Relaxed)
            );
        }
    }
}

#[cfg(test)]
mod tests;

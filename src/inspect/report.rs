//! Turning one inspected exchange into its outputs: a WARN log line per violation, a summary line
//! (INFO when the exchange has something to read, DEBUG when it was clean), metrics, and one line
//! per violation in the violations file.
//!
//! The violations-file lines are typed in [`super::violation_line`] (the documented public shape
//! of docs/violations-file.md).

use super::otlp_span::{self, Judged, TraceSeed};
use super::violation_line::{LineHead, NotListedLine, ViolationLine, to_line};
use super::{ExchangeLabel, Inspected, Inspection};
use crate::engine::violation::{MAX_TEXT_BYTES, bounded_str};
use crate::engine::{Completeness, Report};
use crate::metrics::IncompleteReason;
use crate::tap::tee::{Ending, TapEnd};

/// The facts of an exchange's summary line.
struct Summary<'a> {
    exchange: &'a str,
    route: &'a str,
    model: &'a str,
    stream: bool,
    status: Option<u16>,
    violations: usize,
    incomplete: Vec<&'static str>,
    enforced: bool,
    elapsed_ms: u64,
}

/// The exchange's summary line at `$level` (a `tracing` level must be a constant at the call).
macro_rules! summary_line {
    ($level:expr, $summary:expr) => {{
        let summary: &Summary<'_> = $summary;
        tracing::event!(
            $level,
            exchange = summary.exchange,
            route = summary.route,
            model = %summary.model,
            stream = summary.stream,
            status = summary.status,
            violations = summary.violations,
            incomplete = ?summary.incomplete,
            enforced = summary.enforced,
            elapsed_ms = summary.elapsed_ms,
            "exchange inspected"
        );
    }};
}

/// What the inspector saw of the request body.
pub(super) struct RequestSeen<'a> {
    pub end: Option<&'a TapEnd>,
    /// Over `inspect.max_request_body`: not judged, reported `too_large`.
    pub too_large: bool,
    /// Holding it would have crossed `inspect.max_memory`: not judged.
    pub over_memory: bool,
}

pub(super) fn emit(
    shared: &Inspection,
    label: &ExchangeLabel,
    request: RequestSeen<'_>,
    outcome: Inspected,
    enforced: bool,
    quirk: Option<&str>,
    trace: &TraceSeed,
) {
    let route = &*label.route;
    let metrics = &shared.metrics;
    let (report, end) = match outcome {
        Inspected::Judged { report, end } => (report, end),
        Inspected::Panicked => {
            metrics.incomplete(route, IncompleteReason::InspectionFailed);
            if let Some(spans) = &shared.otlp {
                otlp_span::send_unjudged(spans, label, trace, "inspection_failed");
            }
            tracing::error!(
                exchange = &*label.id,
                route,
                "inspection failed: the analysis panicked on this exchange; the client was not affected"
            );
            return;
        }
    };
    let model = metrics.model_label(report.request.model.as_deref());
    let stream = report.request.stream;
    let dialect = report.dialect.as_str();
    metrics.inspected(route, &model, stream, dialect);
    // What the tee added on the client path: its copy time per response frame, one sample per
    // exchange (the mean over its frames).
    if let Some(end) = end.as_ref().filter(|end| end.copied_frames > 0) {
        let frames = u32::try_from(end.copied_frames).unwrap_or(u32::MAX);
        metrics.frame_overhead(route, end.copy_time / frames);
    }
    for (body, end) in [("request", request.end), ("response", end.as_ref())] {
        metrics.frames_not_copied(route, body, end.map_or(0, |end| end.skipped_frames));
    }
    let incomplete = incomplete_reasons(&request, end.as_ref(), &report, enforced);
    for reason in &incomplete {
        metrics.incomplete(route, *reason);
    }

    // Only violation lines carry a time stamp: a clean exchange formats none.
    let ts = if report.violations.is_empty() && report.violations_not_listed == 0 {
        String::new()
    } else {
        humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
    };
    // The model as sent, bounded like a violation's texts: it is repeated on every line.
    let sent_model = report
        .request
        .model
        .as_deref()
        .map(|sent| bounded_str(sent, MAX_TEXT_BYTES));
    let head = LineHead {
        ts: &ts,
        exchange: &label.id,
        route,
        model: sent_model.as_deref(),
        stream,
    };
    let mut lines = Vec::with_capacity(report.violations.len());
    for v in &report.violations {
        let rule = v.rule.as_str();
        let severity = v.severity.as_str();
        metrics.violation(route, &model, rule, severity, dialect);
        tracing::warn!(
            exchange = &*label.id,
            route,
            model = %model,
            rule,
            severity,
            path = %v.path,
            detail = %v.detail,
            "contract violation"
        );
        lines.push(to_line(&ViolationLine::new(head, dialect, v, quirk)));
    }
    let not_listed = report.violations_not_listed;
    if not_listed > 0 {
        metrics.violations_not_listed(route, not_listed);
        tracing::warn!(
            exchange = &*label.id,
            route,
            not_listed,
            "more violations in this exchange than inspect.max_violations: the rest are counted, not listed"
        );
        lines.push(to_line(&NotListedLine::new(head, not_listed)));
    }
    metrics.schema_cache_bytes(shared.schemas.bytes());
    if let Some(sink) = &shared.violations {
        sink.append(lines);
    }
    if let Some(spans) = &shared.otlp {
        let judged = Judged {
            report: &report,
            incomplete: &incomplete,
            enforced,
        };
        otlp_span::send_judged(spans, label, trace, judged);
    }
    // One line per exchange: at INFO when there is something to read in it (violations, an
    // incomplete inspection, an enforced cut), at DEBUG when the exchange was clean. A clean
    // exchange's facts are in the metrics (`tooltap_exchanges_inspected_total`,
    // `tooltap_requests_total`, `tooltap_response_duration_seconds`); formatting its line is a
    // noticeable share of a fully inspected request (see docs/benchmarks.md#summary-line).
    let at_info =
        !report.violations.is_empty() || not_listed > 0 || !incomplete.is_empty() || enforced;
    if !at_info && !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let summary = Summary {
        exchange: &label.id,
        route,
        model: &model,
        stream,
        status: report.status,
        violations: report.violations.len(),
        incomplete: incomplete.iter().map(|r| r.as_str()).collect(),
        enforced,
        elapsed_ms: label.started.elapsed().as_millis() as u64,
    };
    if at_info {
        summary_line!(tracing::Level::INFO, &summary);
    } else {
        summary_line!(tracing::Level::DEBUG, &summary);
    }
}

/// Why this inspection saw less than the whole exchange (our limits, not violations).
fn incomplete_reasons(
    request: &RequestSeen<'_>,
    response_end: Option<&TapEnd>,
    report: &Report,
    enforced: bool,
) -> Vec<IncompleteReason> {
    let mut reasons = Vec::new();
    let lossy = request.end.is_some_and(|e| e.lossy) || response_end.is_some_and(|e| e.lossy);
    if lossy {
        reasons.push(IncompleteReason::Lossy);
    }
    match response_end.map(|e| &e.ending) {
        // Enforce mode ended the body on purpose: the rest was refused, nobody left.
        Some(Ending::ReaderGone) if enforced => {}
        // A reader that left after the content was whole (`[DONE]` seen: the Python SDK closes
        // right then) missed nothing the verdict needs.
        Some(Ending::ReaderGone) if report.completeness == Completeness::Complete => {}
        Some(Ending::ReaderGone) => reasons.push(IncompleteReason::ReaderGone),
        Some(Ending::UpstreamBroke(_)) => reasons.push(IncompleteReason::UpstreamBroke),
        Some(Ending::Complete | Ending::Trailers) | None => {}
    }
    if request.too_large || matches!(report.completeness, Completeness::TooLarge { .. }) {
        reasons.push(IncompleteReason::TooLarge);
    }
    if request.over_memory {
        reasons.push(IncompleteReason::MemoryBudget);
    }
    match report.completeness {
        Completeness::SchemaBudget { .. } => reasons.push(IncompleteReason::SchemaBudget),
        Completeness::SchemaStreaming { .. } => reasons.push(IncompleteReason::SchemaStreaming),
        _ => {}
    }
    reasons
}

//! The two log records every exchange makes — its span and the inspector's INFO summary —
//! built cheaply when the log is plain text.
//!
//! Input: the exchange's facts. Output: a `tracing` span, and the summary event. The fmt layer
//! formats each field of a span or event through `core::fmt` and its field visitor; measured
//! with callgrind, that was ~5 k instructions for the span's four fields and ~5 k for the
//! summary's nine, per request (of ~144 k with full inspection, ~72 k for the pass-through).
//! With the plain human format (`log.format = human`, no colours: files, pipes, `docker logs`)
//! the same text is preformatted here in one string and handed over as the record's message,
//! so the line written is byte for byte what the structured fields would print. With colours
//! or `--log-format json` the records stay structured (field names are styled, or are JSON
//! keys). [`set_plain`] is called once by the binary when it sets up logging; tests and
//! embedders that never call it get the structured records.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::Span;

use crate::exchange::ExchangeCtx;

static PLAIN: AtomicBool = AtomicBool::new(false);

/// The targets these records always had (printed in the line, matched by `RUST_LOG`).
const SPAN_TARGET: &str = "tooltap::service";
const SUMMARY_TARGET: &str = "tooltap::inspect::report";

/// Says whether the log is plain text (the human format without colours).
pub fn set_plain(plain: bool) {
    PLAIN.store(plain, Ordering::Relaxed);
}

fn plain() -> bool {
    PLAIN.load(Ordering::Relaxed)
}

/// The exchange's span: `exchange{id=… route=… method=… path=…}`, and an empty `quirk` field
/// that `--inject` fills in.
pub fn exchange_span(ctx: &ExchangeCtx) -> Span {
    if !plain() {
        return tracing::info_span!(
            target: SPAN_TARGET,
            "exchange",
            id = %ctx.id,
            route = %ctx.route,
            method = %ctx.method,
            path = %ctx.path,
            quirk = tracing::field::Empty,
        );
    }
    // The field values are built only when the span is enabled.
    tracing::info_span!(
        target: SPAN_TARGET,
        "exchange",
        message = %span_text(ctx),
        quirk = tracing::field::Empty,
    )
}

fn span_text(ctx: &ExchangeCtx) -> String {
    let (id, route, method, path) = (
        ctx.id.as_str(),
        &*ctx.route,
        ctx.method.as_str(),
        ctx.path.as_str(),
    );
    let mut text = String::with_capacity(30 + id.len() + route.len() + path.len());
    for (name, value) in [
        ("id=", id),
        (" route=", route),
        (" method=", method),
        (" path=", path),
    ] {
        text.push_str(name);
        text.push_str(value);
    }
    text
}

/// What the summary line says about one inspected exchange.
pub struct Summary<'a> {
    pub exchange: &'a str,
    pub route: &'a str,
    pub model: &'a str,
    pub stream: bool,
    /// `None` when the upstream never answered with a status.
    pub status: Option<u16>,
    pub violations: usize,
    pub incomplete: &'a [&'a str],
    pub enforced: bool,
    pub elapsed_ms: u64,
}

/// The INFO line `exchange inspected exchange="…" route="…" model=… stream=… status=…
/// violations=… incomplete=[…] enforced=… elapsed_ms=…`.
pub fn exchange_inspected(s: &Summary<'_>) {
    if !plain() {
        tracing::info!(
            target: SUMMARY_TARGET,
            exchange = s.exchange,
            route = s.route,
            model = %s.model,
            stream = s.stream,
            status = s.status,
            violations = s.violations,
            incomplete = ?s.incomplete,
            enforced = s.enforced,
            elapsed_ms = s.elapsed_ms,
            "exchange inspected"
        );
        return;
    }
    tracing::info!(target: SUMMARY_TARGET, "{}", summary_text(s));
}

fn summary_text(s: &Summary<'_>) -> String {
    let mut text = String::with_capacity(160 + s.route.len() + s.model.len());
    text.push_str("exchange inspected exchange=");
    quoted(&mut text, s.exchange);
    text.push_str(" route=");
    quoted(&mut text, s.route);
    text.push_str(" model=");
    text.push_str(s.model);
    text.push_str(if s.stream {
        " stream=true"
    } else {
        " stream=false"
    });
    // An absent status is no field at all, as `tracing` records a `None`.
    if let Some(status) = s.status {
        text.push_str(" status=");
        decimal(&mut text, u64::from(status));
    }
    text.push_str(" violations=");
    decimal(&mut text, s.violations as u64);
    text.push_str(" incomplete=[");
    for (i, reason) in s.incomplete.iter().enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        quoted(&mut text, reason);
    }
    text.push_str(if s.enforced {
        "] enforced=true elapsed_ms="
    } else {
        "] enforced=false elapsed_ms="
    });
    decimal(&mut text, s.elapsed_ms);
    text
}

/// `value` as `{:?}` prints a `str`; without the formatting machinery when nothing needs escaping.
fn quoted(text: &mut String, value: &str) {
    if value
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ')
    {
        text.push('"');
        text.push_str(value);
        text.push('"');
    } else {
        let _ = write!(text, "{value:?}");
    }
}

fn decimal(text: &mut String, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    for &digit in &digits[at..] {
        text.push(char::from(digit));
    }
}

#[cfg(test)]
#[path = "logline_tests.rs"]
mod tests;

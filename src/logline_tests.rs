//! The preformatted records print exactly what the structured ones print: the same span, the
//! same summary line, byte for byte, through the real fmt layer (plain text, no colours).

use std::sync::{Arc, Mutex};

use http::Method;
use tracing_subscriber::fmt::MakeWriter;

use super::*;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;

    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

/// What the fmt layer writes for one exchange's span (with a quirk recorded) and summary.
fn written(plain: bool, ctx: &ExchangeCtx, summary: &Summary<'_>) -> String {
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(buffer.clone())
        .with_ansi(false)
        .without_time()
        .finish();
    set_plain(plain);
    tracing::subscriber::with_default(subscriber, || {
        let span = exchange_span(ctx);
        span.record("quirk", "drop-finish");
        let _inside = span.enter();
        exchange_inspected(summary);
    });
    set_plain(false);
    let text = buffer.0.lock().expect("buffer").clone();
    String::from_utf8(text).expect("utf-8")
}

#[test]
fn plain_records_print_what_structured_ones_print() {
    let cases: [(&str, &str, Option<u16>, &[&str]); 3] = [
        ("default", "gpt-4o", Some(200), &[]),
        ("we\"ird route", "unknown", None, &["lossy", "client_gone"]),
        ("groq", "llama-3.1:8b", Some(502), &["too_large"]),
    ];
    for (route, model, status, incomplete) in cases {
        let ctx = ExchangeCtx::begin(Arc::from(route), &Method::POST, "/v1/chat/completions");
        let summary = Summary {
            exchange: ctx.id.as_str(),
            route,
            model,
            stream: status.is_some(),
            status,
            violations: incomplete.len(),
            incomplete,
            enforced: status == Some(502),
            elapsed_ms: 12_345,
        };
        let structured = written(false, &ctx, &summary);
        let plain = written(true, &ctx, &summary);
        assert!(structured.contains("exchange inspected"), "{structured}");
        assert!(structured.contains("quirk=\"drop-finish\""), "{structured}");
        assert_eq!(plain, structured);
    }
}

#[test]
fn decimals_and_quotes() {
    let mut text = String::new();
    decimal(&mut text, 0);
    text.push(' ');
    decimal(&mut text, u64::MAX);
    assert_eq!(text, format!("0 {}", u64::MAX));
    let mut text = String::new();
    quoted(&mut text, "a b");
    quoted(&mut text, "t\\x\u{1b}é");
    assert_eq!(text, format!("\"a b\"{:?}", "t\\x\u{1b}é"));
}

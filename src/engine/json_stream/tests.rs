//! The streaming parser against serde_json: the same texts accepted, the same values seen
//! through the events, and one break offset whatever the split.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::*;

/// An event with its text owned, to compare runs.
#[derive(Debug, Clone, PartialEq)]
enum Owned {
    BeginObject,
    EndObject,
    BeginArray,
    EndArray,
    Key(OwnedText),
    String(OwnedText),
    Number(OwnedText),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
enum OwnedText {
    Held(String),
    Long { bytes: u64, chars: u64 },
}

fn own(text: Text<'_>) -> OwnedText {
    match text {
        Text::Held(held) => OwnedText::Held(held.to_owned()),
        Text::Long { bytes, chars } => OwnedText::Long { bytes, chars },
    }
}

fn owned(event: Event<'_>) -> Owned {
    match event {
        Event::BeginObject => Owned::BeginObject,
        Event::EndObject => Owned::EndObject,
        Event::BeginArray => Owned::BeginArray,
        Event::EndArray => Owned::EndArray,
        Event::Key(text) => Owned::Key(own(text)),
        Event::String(text) => Owned::String(own(text)),
        Event::Number(text) => Owned::Number(own(text)),
        Event::Bool(value) => Owned::Bool(value),
        Event::Null => Owned::Null,
    }
}

/// Parses `text` cut at `cuts` (offsets, any order, clamped).
fn run(text: &[u8], cuts: &[usize], hold: usize) -> (Result<(), Broken>, Vec<Owned>) {
    let mut cuts: Vec<usize> = cuts.iter().map(|&cut| cut.min(text.len())).collect();
    cuts.sort_unstable();
    let mut parser = JsonStream::new(hold);
    let mut events = Vec::new();
    let mut on = |event: Event<'_>| events.push(owned(event));
    let mut from = 0;
    let mut result = Ok(());
    for cut in cuts.into_iter().chain([text.len()]) {
        result = parser.push(&text[from..cut], &mut on);
        from = cut;
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = parser.finish(&mut on);
    }
    (result, events)
}

/// The value the events describe (held texts only).
fn rebuild(events: &[Owned]) -> Option<Value> {
    fn value(events: &mut std::slice::Iter<'_, Owned>) -> Option<Value> {
        Some(match events.next()? {
            Owned::BeginObject => {
                let mut map = Map::new();
                loop {
                    match events.next()? {
                        Owned::EndObject => break Value::Object(map),
                        Owned::Key(OwnedText::Held(key)) => {
                            let member = value(events)?;
                            map.insert(key.clone(), member);
                        }
                        _ => return None,
                    }
                }
            }
            Owned::BeginArray => {
                let mut items = Vec::new();
                loop {
                    let rest = events.clone();
                    if let Some(Owned::EndArray) = events.next() {
                        break Value::Array(items);
                    }
                    *events = rest;
                    items.push(value(events)?);
                }
            }
            Owned::String(OwnedText::Held(text)) => Value::String(text.clone()),
            Owned::Number(OwnedText::Held(token)) => serde_json::from_str(token).ok()?,
            Owned::Bool(flag) => Value::Bool(*flag),
            Owned::Null => Value::Null,
            _ => return None,
        })
    }
    let mut iter = events.iter();
    let built = value(&mut iter)?;
    iter.next().is_none().then_some(built)
}

fn serde_accepts(text: &[u8]) -> bool {
    serde_json::from_slice::<Value>(text).is_ok()
}

/// Same verdict as serde, same break and events for every split as unsplit and byte by byte.
fn agrees(text: &[u8], cuts: &[usize], hold: usize) -> Result<(), TestCaseError> {
    let whole = run(text, &[], hold);
    prop_assert_eq!(
        whole.0.is_ok(),
        serde_accepts(text),
        "{:?}",
        String::from_utf8_lossy(text)
    );
    let split = run(text, cuts, hold);
    prop_assert_eq!(&split, &whole);
    let every: Vec<usize> = (1..text.len()).collect();
    let bytewise = run(text, &every, hold);
    prop_assert_eq!(&bytewise, &whole);
    if let Err(broken) = whole.0 {
        // Everything before the break is a prefix some text completes: no earlier break.
        let offset = usize::try_from(broken.offset)
            .unwrap_or(usize::MAX)
            .min(text.len());
        let mut parser = JsonStream::new(hold);
        let before = parser.push(&text[..offset], &mut |_| ());
        prop_assert!(before.is_ok(), "broke before {}", offset);
    }
    Ok(())
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        "[a-z\"\\\\\u{0}-\u{1f}\u{e9}\u{1F600}]{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..400, 0..10)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn written_json_is_accepted_and_seen_as_serde_reads_it(
        value in arb_json(),
        pretty in any::<bool>(),
        cuts in cuts(),
    ) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap_or_default()
        } else {
            value.to_string()
        };
        agrees(text.as_bytes(), &cuts, 1 << 20)?;
        let (result, events) = run(text.as_bytes(), &cuts, 1 << 20);
        prop_assert!(result.is_ok());
        let expected: Value = serde_json::from_str(&text).unwrap_or_default();
        prop_assert_eq!(rebuild(&events), Some(expected));
    }

    #[test]
    fn long_strings_are_counted_not_held(value in arb_json(), cuts in cuts()) {
        let text = value.to_string();
        agrees(text.as_bytes(), &cuts, 3)?;
        let (_, events) = run(text.as_bytes(), &cuts, 3);
        let (_, held) = run(text.as_bytes(), &[], 1 << 20);
        prop_assert_eq!(events.len(), held.len());
        for (small, whole) in events.iter().zip(&held) {
            if let (Owned::String(OwnedText::Long { bytes, chars }), Owned::String(OwnedText::Held(full)))
            | (Owned::Key(OwnedText::Long { bytes, chars }), Owned::Key(OwnedText::Held(full))) = (small, whole)
            {
                prop_assert!(full.len() > 3);
                prop_assert_eq!(*bytes, full.len() as u64);
                prop_assert_eq!(*chars, full.chars().count() as u64);
            } else {
                prop_assert_eq!(small, whole);
            }
        }
    }

    #[test]
    fn arbitrary_text_is_judged_as_serde_judges_it(
        text in "[\\[\\]{}\":,0-9eE.+\\- tfrunlas\\\\/u\u{0}\u{1f}\u{e9}\u{1F600}]{0,24}",
        cuts in cuts(),
    ) {
        agrees(text.as_bytes(), &cuts, 1 << 20)?;
        agrees(text.as_bytes(), &cuts, 2)?;
    }

    #[test]
    fn edited_json_is_judged_as_serde_judges_it(
        value in arb_json(),
        edits in prop::collection::vec((0usize..400, 0u8..3, any::<u8>()), 1..4),
        cuts in cuts(),
    ) {
        let mut text = value.to_string().into_bytes();
        for (at, kind, byte) in edits {
            let at = at % (text.len() + 1);
            let table = b"{}[]\",:\\u0-e.+ tfn\xe9\x80\xff\x1f";
            let byte = table[usize::from(byte) % table.len()];
            match kind {
                0 => text.insert(at, byte),
                1 if at < text.len() => { text.remove(at); }
                _ if at < text.len() => text[at] = byte,
                _ => text.push(byte),
            }
        }
        agrees(&text, &cuts, 1 << 20)?;
    }
}

#[test]
fn nesting_stops_where_serde_stops() {
    for depth in [1, 126, 127, 128, 200] {
        let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let (result, _) = run(text.as_bytes(), &[], 64);
        assert_eq!(result.is_ok(), serde_accepts(text.as_bytes()), "{depth}");
        assert_eq!(result.is_ok(), depth <= MAX_DEPTH, "{depth}");
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        let (result, _) = run(objects.as_bytes(), &[], 64);
        assert_eq!(result.is_ok(), serde_accepts(objects.as_bytes()), "{depth}");
    }
}

#[test]
fn numbers_are_refused_where_serde_refuses_them() {
    let zeros = |n: usize| "0".repeat(n);
    let texts = [
        "1e400".to_owned(),
        "-1e400".to_owned(),
        "1e-400".to_owned(),
        "1.7976931348623157e308".to_owned(),
        "1.7976931348623158e308".to_owned(),
        "1.7976931348623159e308".to_owned(),
        "17976931348623157e292".to_owned(),
        format!("1{}", zeros(400)),
        format!("1{}", zeros(308)),
        format!("1{}", zeros(1500)),
        format!("-1{}e-1200", zeros(1500)),
        format!("1{}e-1100", zeros(1500)),
        format!("0.{}1", zeros(2000)),
        format!("0.{}1e2400", zeros(2000)),
        format!("0.{}17976931348623157e2309", zeros(2000)),
        format!("0.{}17976931348623159e2309", zeros(2000)),
        format!("17976931348623157{}", zeros(1292)),
        format!("17976931348623157{}.{}", zeros(292), zeros(1500)),
        format!("17976931348623158{}1", zeros(1291)),
        format!("1797693134862315708145274237317043567981{}", zeros(1269)),
        format!(
            "1797693134862315708145274237317043567981{}1e-961",
            zeros(1269)
        ),
        format!("[{}1e99999999999999999999999]", zeros(0)),
        "0e99999999999999999999".to_owned(),
        "-0.0e-99999999999999999999".to_owned(),
        "1e-99999999999999999999".to_owned(),
        "01".to_owned(),
        "-".to_owned(),
        "1.".to_owned(),
        "1e".to_owned(),
        "1e+".to_owned(),
        "[1,]".to_owned(),
        "[-]".to_owned(),
        "1.e3".to_owned(),
    ];
    for text in texts {
        let (result, _) = run(text.as_bytes(), &[], 64);
        let shown = &text[..text.len().min(60)];
        assert_eq!(result.is_ok(), serde_accepts(text.as_bytes()), "{shown}");
    }
}

#[test]
fn a_break_names_the_byte_that_made_the_text_impossible() {
    let cases: [(&str, u64); 8] = [
        (r#"{"a":1,}"#, 7),
        (r#"{"a" 1}"#, 5),
        (r#"{"a":"b\q"}"#, 8),
        ("[1,2]x", 5),
        (r#"{"a":"\ud800x"}"#, 12),
        (r#"{"a":"\udc00"}"#, 11),
        ("[1e400]", 6),
        ("{\"a\":[", 6),
    ];
    for (text, offset) in cases {
        let (result, _) = run(text.as_bytes(), &[], 64);
        assert_eq!(
            result.map_err(|broken| broken.offset),
            Err(offset),
            "{text}"
        );
    }
}

#[test]
fn what_it_holds_stays_within_its_bounds() {
    let long = format!(
        r#"{{"content":"{}","n":[{}]}}"#,
        "x".repeat(1 << 20),
        "1,".repeat(1000) + "1"
    );
    let mut parser = JsonStream::new(16 * 1024);
    let mut most = 0;
    for piece in long.as_bytes().chunks(1024) {
        assert!(parser.push(piece, &mut |_| {}).is_ok());
        most = most.max(parser.held_bytes());
    }
    assert!(parser.finish(&mut |_| {}).is_ok());
    assert!(most <= 17 * 1024, "held {most} bytes");
}

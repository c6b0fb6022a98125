//! The scan against serde_json: whatever the scan reads, serde reads the same; whatever serde
//! refuses, the scan refuses too; and the ordinary shapes are taken, not left to serde.

use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::*;

fn scanned(text: &str) -> Option<Value> {
    let mut scan = Scan::new(text);
    let value = scan.value()?;
    scan.end()?;
    Some(value)
}

/// The value's text as [`Scan::value_text`] keeps it, read to a tree by serde.
fn texted(text: &str) -> Option<Value> {
    let mut scan = Scan::new(text);
    let kept = scan.value_text()?;
    scan.end()?;
    Some(serde_json::from_str(kept).expect("value_text keeps only what serde reads"))
}

fn skipped(text: &str) -> Option<()> {
    let mut scan = Scan::new(text);
    scan.skip()?;
    scan.end()
}

#[test]
fn ordinary_values_are_read_as_serde_reads_them() {
    let texts = [
        r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
        " \t\r\n{ \"a\" : [ 1 , 2 ] } \n",
        r#"{"arguments":"{\"city\":\"Paris\"}","n":0}"#,
        r#""caf\u00e9 \ud83d\ude00 \/\b\f\n\r\t\\\"""#,
        r#"{"k\u0065y":1,"key":2}"#,
        r#"{"a":1,"a":2}"#,
        "[]",
        "{}",
        "[[[]]]",
        "-0",
        "-12",
        "1.5e-3",
        "1E+2",
        "18446744073709551615",
        "18446744073709551616",
        "0",
        "\"\u{7f}\u{e9}\u{1F600}\"",
    ];
    for text in texts {
        let expected: Value = serde_json::from_str(text).unwrap();
        assert_eq!(scanned(text), Some(expected.clone()), "{text}");
        assert_eq!(texted(text), Some(expected), "{text}");
        assert_eq!(skipped(text), Some(()), "{text}");
    }
    // Bit for bit: serde reads `-0` as a float.
    assert_eq!(scanned("-0").unwrap().to_string(), "-0.0");
}

#[test]
fn what_serde_refuses_the_scan_refuses() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let texts = [
        "",
        " ",
        "{",
        "{\"a\":1,}",
        "[1,]",
        "[1 2]",
        "{\"a\" 1}",
        "{a:1}",
        "01",
        "1.",
        ".5",
        "1e",
        "--1",
        "+1",
        "1e999",
        "nul",
        "nulll",
        "tru",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"raw\ttab\"",
        "\"unterminated",
        "1 2",
        "{} x",
        deep.as_str(),
    ];
    for text in texts {
        assert!(
            serde_json::from_str::<Value>(text).is_err(),
            "serde takes {text}"
        );
        assert_eq!(scanned(text), None, "{text}");
        assert_eq!(texted(text), None, "{text}");
    }
    // Skipping: serde's skip takes two of these. An out-of-range exponent has JSON's grammar
    // and is skipped alike; a lone surrogate is left to serde.
    assert!(serde_json::from_str::<IgnoredAny>("1e999").is_ok());
    assert_eq!(skipped("1e999"), Some(()));
    assert!(serde_json::from_str::<IgnoredAny>("\"\\ud800\"").is_ok());
    assert_eq!(skipped("\"\\ud800\""), None);
}

#[test]
fn an_object_member_with_an_escaped_key_is_left_to_serde() {
    let mut scan = Scan::new(r#"{"a\"b":1}"#);
    assert_eq!(scan.object(|scan, _| scan.skip()), None);
    let mut keys = Vec::new();
    let mut scan = Scan::new(r#"{"a":1, "b" : {"c":[2]}}"#);
    scan.object(|scan, key| {
        keys.push(key);
        scan.skip()
    })
    .unwrap();
    assert!(scan.end().is_some());
    assert_eq!(keys, ["a", "b"]);
}

#[test]
fn members_seen_twice_are_told() {
    let mut seen = Seen::default();
    assert!(seen.first(0).is_some());
    assert!(seen.first(3).is_some());
    assert!(seen.first(0).is_none());
    assert!(seen.first(3).is_none());
}

#[test]
fn an_escaped_string_early_in_a_large_text_does_not_keep_the_room_of_the_rest() {
    let text = format!("line\\none\"{}", "x".repeat(1 << 20));
    let (decoded, used) = string_body(&text).expect("a string");
    assert_eq!(decoded, "line\none");
    assert_eq!(used, "line\\none\"".len());
    assert!(decoded.capacity() <= FIRST_ROOM, "{}", decoded.capacity());
    // Longer than the first room: it grows, whole.
    let long = format!("{}\\t{}\"", "a".repeat(FIRST_ROOM), "b".repeat(FIRST_ROOM));
    let (decoded, _) = string_body(&long).expect("a string");
    assert_eq!(decoded.len(), 2 * FIRST_ROOM + 1);
    assert_eq!(decoded.as_bytes()[FIRST_ROOM], b'\t');
}

fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// A small edit of `text` at `at` (by chars): one char removed, doubled or replaced by one
/// JSON cares about.
pub(crate) fn edited(text: &str, at: usize, edit: u8) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return String::new();
    }
    let at = at % chars.len();
    let mut out: Vec<char> = chars[..at].to_vec();
    let replacement = b"\"\\{}[],:0-.eu \x01"[usize::from(edit) % 15] as char;
    match edit % 3 {
        0 => {}
        1 => out.extend([chars[at], chars[at]]),
        _ => out.push(replacement),
    }
    out.extend(&chars[at + 1..]);
    out.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]
    #[test]
    fn any_json_written_is_read_as_serde_reads_it(value in any_value(), pretty: bool) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let expected: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(scanned(&text), Some(expected.clone()));
        prop_assert_eq!(texted(&text), Some(expected));
        prop_assert_eq!(skipped(&text), Some(()));
    }

    #[test]
    fn an_edited_text_is_taken_only_as_serde_takes_it(
        value in any_value(),
        at: usize,
        edit: u8,
    ) {
        let text = edited(&serde_json::to_string(&value).unwrap(), at, edit);
        if let Some(read) = scanned(&text) {
            prop_assert_eq!(Some(read), serde_json::from_str::<Value>(&text).ok(), "{}", text);
        }
        // The text kept is taken exactly where the tree is.
        prop_assert_eq!(texted(&text), scanned(&text), "{}", text);
        if skipped(&text).is_some() {
            prop_assert!(serde_json::from_str::<IgnoredAny>(&text).is_ok(), "{}", text);
        }
    }
}

/// JSON text built from `keys` (as written, escapes included) and `leaves` (JSON texts), or any
/// string, nested up to `depth`, whose objects may repeat a key (which a `Value` cannot write).
pub(crate) fn json_text_of(
    keys: Vec<&'static str>,
    leaves: Vec<&'static str>,
    depth: u32,
) -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(leaves).prop_map(str::to_owned);
    let leaf = prop_oneof![
        4 => fixed,
        1 => any::<String>().prop_map(|text| Value::String(text).to_string()),
    ];
    let key = prop::sample::select(keys);
    leaf.prop_recursive(depth, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((key.clone(), inner), 0..6).prop_map(|members| {
                let members: Vec<String> = members
                    .iter()
                    .map(|(key, value)| format!("\"{key}\":{value}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

//! The JSON-array framer's cases and its split invariance (property); its linear cost is
//! `engine_cost::json_array` (it reads the thread's CPU time, which the sans-IO engine may not).

use proptest::prelude::*;

use super::*;
use crate::engine::framing::split_driver::{self, push_all};

fn frame_with(
    max: usize,
    chunks: &[&[u8]],
) -> (Vec<String>, Result<(), ElementTooLarge>, ArrayEnd) {
    let mut framer = JsonArrayFramer::new(max);
    let mut elements = Vec::new();
    let result = push_all(chunks, |chunk| framer.push(chunk, &mut elements));
    (elements, result, framer.end())
}

fn frame(chunks: &[&[u8]]) -> (Vec<String>, ArrayEnd) {
    let (elements, result, end) = frame_with(1 << 20, chunks);
    assert_eq!(result, Ok(()));
    (elements, end)
}

/// Frames `bytes` whole, cut at every offset, and one byte at a time; all must agree.
fn frame_every_way(bytes: &[u8]) -> (Vec<String>, ArrayEnd) {
    split_driver::frame_every_way(bytes, frame)
}

#[test]
fn gemini_crlf_array_yields_each_object() {
    let body = b"[{\"candidates\": [{\"index\": 0}]}\r\n,\r\n{\"usageMetadata\": {}}\r\n]";
    let (elements, end) = frame_every_way(body);
    assert_eq!(
        elements,
        [
            "{\"candidates\": [{\"index\": 0}]}",
            "{\"usageMetadata\": {}}"
        ]
    );
    assert_eq!(end, ArrayEnd::Closed);
}

#[test]
fn an_element_is_handed_out_by_the_push_that_closes_it() {
    let mut framer = JsonArrayFramer::new(1024);
    let mut elements = Vec::new();
    framer.push(b"[{\"a\":", &mut elements).expect("fits");
    assert!(elements.is_empty() && framer.has_pending());
    framer.push(b"1}", &mut elements).expect("fits");
    assert_eq!(elements, ["{\"a\":1}"], "no wait for the comma or `]`");
    assert!(!framer.has_pending() && !framer.is_closed());
    framer.push(b"\r\n]\r\n", &mut elements).expect("fits");
    assert!(framer.is_closed());
}

#[test]
fn strings_with_escaped_quotes_and_brackets_do_not_end_an_element() {
    let body = br#"[{"t":"a \"]} [{ \\"},["x]",{"y":"\\\""}] , "s\"],"  ,[[]]]"#;
    let (elements, end) = frame_every_way(body);
    assert_eq!(
        elements,
        [
            r#"{"t":"a \"]} [{ \\"}"#,
            r#"["x]",{"y":"\\\""}]"#,
            r#""s\"],""#,
            "[[]]"
        ]
    );
    assert_eq!(end, ArrayEnd::Closed);
    for element in &elements {
        serde_json::from_str::<serde_json::Value>(element).expect("each element is JSON");
    }
}

#[test]
fn scalars_end_at_a_comma_whitespace_or_the_closing_bracket() {
    let (elements, end) = frame_every_way(b"[1,-2.5e3 ,true\n,null]");
    assert_eq!(elements, ["1", "-2.5e3", "true", "null"]);
    assert_eq!(end, ArrayEnd::Closed);
}

#[test]
fn split_code_points_decode_whole() {
    let body = "[{\"t\":\"h\u{e9}\u{1f600}\"}]".as_bytes();
    let (elements, end) = frame_every_way(body);
    assert_eq!(elements, ["{\"t\":\"h\u{e9}\u{1f600}\"}"]);
    assert_eq!(end, ArrayEnd::Closed);
}

#[test]
fn empty_arrays_and_empty_bodies_are_told_apart() {
    assert_eq!(frame_every_way(b" [ \r\n ] "), (vec![], ArrayEnd::Closed));
    assert_eq!(frame_every_way(b""), (vec![], ArrayEnd::Empty));
    assert_eq!(frame_every_way(b" \r\n"), (vec![], ArrayEnd::Empty));
}

#[test]
fn a_body_that_is_not_an_array_frames_nothing() {
    let (elements, end) = frame_every_way(b"\r\n{\"error\":{\"code\":400}}");
    assert!(elements.is_empty());
    assert_eq!(end, ArrayEnd::NotAnArray { offset: 2 });
}

#[test]
fn a_missing_closing_bracket_is_its_own_ending() {
    assert_eq!(
        frame_every_way(b"[{\"a\":1},{\"b\":2}\r\n"),
        (
            vec!["{\"a\":1}".to_owned(), "{\"b\":2}".to_owned()],
            ArrayEnd::Unterminated {
                pending_element: false
            }
        )
    );
    assert_eq!(
        frame_every_way(b"[{\"a\":1},"),
        (
            vec!["{\"a\":1}".to_owned()],
            ArrayEnd::Unterminated {
                pending_element: false
            }
        )
    );
    assert_eq!(
        frame_every_way(b"[{\"a\":1},{\"b\":\"]"),
        (
            vec!["{\"a\":1}".to_owned()],
            ArrayEnd::Unterminated {
                pending_element: true
            }
        )
    );
    assert_eq!(
        frame_every_way(b"["),
        (
            vec![],
            ArrayEnd::Unterminated {
                pending_element: false
            }
        )
    );
}

#[test]
fn bytes_after_the_closing_bracket_are_reported_and_not_framed() {
    let (elements, end) = frame_every_way(b"[{\"a\":1}]\r\n[{\"b\":2}]");
    assert_eq!(elements, ["{\"a\":1}"]);
    assert_eq!(end, ArrayEnd::TrailingBytes { offset: 11 });
}

#[test]
fn bad_bytes_between_elements_stop_framing() {
    let cases: [(&[u8], usize, u64); 6] = [
        (b"[{\"a\":1}{\"b\":2}]", 1, 8),
        (b"[{\"a\":1},,{\"b\":2}]", 1, 9),
        (b"[,{\"a\":1}]", 0, 1),
        (b"[{\"a\":1},]", 1, 9),
        (b"[{\"a\":1}}]", 1, 8),
        (b"[tru\"e\"]", 0, 4),
    ];
    for (body, framed, offset) in cases {
        let (elements, end) = frame_every_way(body);
        assert_eq!(elements.len(), framed, "{body:?}");
        assert_eq!(end, ArrayEnd::Malformed { offset }, "{body:?}");
    }
}

#[test]
fn an_element_past_the_bound_stops_framing_whole_or_split() {
    let body = br#"[{"a":1},{"b":"0123456789"},{"c":3}]"#;
    let (elements, result, end) = frame_with(10, &[body]);
    assert_eq!(elements, ["{\"a\":1}"]);
    assert_eq!(result, Err(ElementTooLarge { limit: 10 }));
    assert_eq!(
        end,
        ArrayEnd::Unterminated {
            pending_element: true
        }
    );
    let bytewise: Vec<&[u8]> = body.chunks(1).collect();
    let (elements, result, _) = frame_with(10, &bytewise);
    assert_eq!(elements, ["{\"a\":1}"]);
    assert_eq!(result, Err(ElementTooLarge { limit: 10 }));
    let mut framer = JsonArrayFramer::new(10);
    let mut sink = Vec::new();
    assert!(framer.push(body, &mut sink).is_err());
    assert!(framer.push(b"]", &mut sink).is_err(), "stays stopped");
    assert!(
        framer.element.capacity() == 0,
        "the partial element is dropped"
    );
    // Exactly at the bound fits.
    let (elements, result, _) = frame_with(7, &[b"[{\"a\":1}]"]);
    assert_eq!((elements.len(), result), (1, Ok(())));
}

#[test]
fn a_large_element_does_not_leave_a_large_buffer_behind() {
    let mut framer = JsonArrayFramer::new(1 << 20);
    let mut elements = Vec::new();
    let big = format!("{{\"t\":\"{}\"}}", "x".repeat(64 * 1024));
    framer.push(b"[", &mut elements).expect("fits");
    framer
        .push(&big.as_bytes()[..10], &mut elements)
        .expect("fits");
    framer
        .push(&big.as_bytes()[10..], &mut elements)
        .expect("fits");
    assert_eq!(elements[0], big);
    assert!(framer.element.capacity() <= KEPT_ELEMENT_CAPACITY);
}

#[test]
fn an_element_of_many_segments_comes_back_whole_however_it_was_pushed() {
    let element = split_driver::object_of_many_segments();
    let body = format!("[{element},\r\n{{\"n\":1}}]");
    let expected = (vec![element, "{\"n\":1}".to_owned()], ArrayEnd::Closed);
    split_driver::frame_in_segment_pieces(body.as_bytes(), frame, &expected);
}

/// One generated element: JSON text with quotes, escapes, brackets and non-ASCII in strings.
fn element_strategy() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        "[a-z\"\\\\\\[\\]{},: é😀]{0,12}".prop_map(serde_json::Value::String),
        any::<i32>().prop_map(serde_json::Value::from),
        any::<bool>().prop_map(serde_json::Value::Bool),
        Just(serde_json::Value::Null),
    ];
    let value = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::vec(("[a-z\"\\]]{0,4}", inner), 0..4)
                .prop_map(|pairs| serde_json::Value::Object(pairs.into_iter().collect())),
        ]
    });
    (value, any::<bool>()).prop_map(|(value, pretty)| {
        if pretty {
            serde_json::to_string_pretty(&value).unwrap_or_default()
        } else {
            value.to_string()
        }
    })
}

/// How the generated body ends.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Closed,
    NoBracket,
    Trailing,
    CutInElement,
}

fn body_strategy() -> impl Strategy<Value = (Vec<String>, Vec<u8>, Ending, Vec<usize>)> {
    (
        prop::collection::vec(element_strategy(), 0..6),
        prop::collection::vec(
            prop_oneof![Just(""), Just(" "), Just("\r\n"), Just("\n\t")],
            14,
        ),
        prop_oneof![
            Just(Ending::Closed),
            Just(Ending::NoBracket),
            Just(Ending::Trailing),
            Just(Ending::CutInElement),
        ],
        prop::collection::vec(any::<usize>(), 0..8),
    )
        .prop_map(|(elements, spaces, ending, cuts)| {
            let mut body = String::from(spaces[0]);
            body.push('[');
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    body.push_str(spaces[(2 * i) % 14]);
                    body.push(',');
                }
                body.push_str(spaces[(2 * i + 1) % 14]);
                body.push_str(element);
            }
            body.push_str(spaces[13]);
            match ending {
                Ending::Closed => body.push(']'),
                // A trailing scalar ends at whitespace; with none after it, it would still be
                // pending (`[0` may go on as `[01`).
                Ending::NoBracket => body.push_str("\r\n"),
                Ending::Trailing => body.push_str("]\r\n,{}"),
                Ending::CutInElement => body.push_str(if elements.is_empty() {
                    "{\"a\":"
                } else {
                    ",{\"a\":"
                }),
            }
            (elements, body.into_bytes(), ending, cuts)
        })
}

proptest! {
    #[test]
    fn splitting_anywhere_yields_the_same_elements_and_ending(
        (expected, body, ending, raw_cuts) in body_strategy()
    ) {
        let (elements, end) = frame(&[&body]);
        prop_assert_eq!(&elements, &expected);
        let expected_end = match ending {
            Ending::Closed => ArrayEnd::Closed,
            Ending::NoBracket => ArrayEnd::Unterminated { pending_element: false },
            Ending::Trailing => ArrayEnd::TrailingBytes { offset: body.len() as u64 - 3 },
            Ending::CutInElement => ArrayEnd::Unterminated { pending_element: true },
        };
        prop_assert_eq!(end, expected_end);
        let chunks = split_driver::cut_at(&body, raw_cuts);
        prop_assert_eq!(frame(&chunks), (elements.clone(), end));
        let bytewise: Vec<&[u8]> = body.chunks(1).collect();
        prop_assert_eq!(frame(&bytewise), (elements, end));
    }
}

proptest! {
    /// What the fuzz target checks, over bytes drawn from JSON's own alphabet (so that valid
    /// arrays and near misses are common): a split changes nothing, and an array closed by its
    /// `]` that parses as JSON yields exactly its elements.
    #[test]
    fn json_alphabet_bytes_frame_as_a_json_parser_reads_them(
        body in prop::collection::vec(
            prop::sample::select(b"[]{},:\"\\ \r\n1-e.tuna\xc3\xa9".to_vec()),
            0..40,
        ),
        cut in any::<usize>(),
    ) {
        let cut = cut % (body.len() + 1);
        let whole = frame(&[&body]);
        prop_assert_eq!(frame(&[&body[..cut], &body[cut..]]), whole.clone());
        if let (ArrayEnd::Closed, Ok(serde_json::Value::Array(parsed))) =
            (whole.1, serde_json::from_slice::<serde_json::Value>(&body))
        {
            let framed: Vec<serde_json::Value> = whole
                .0
                .iter()
                .filter_map(|e| serde_json::from_str(e).ok())
                .collect();
            prop_assert_eq!(framed, parsed);
        }
    }
}

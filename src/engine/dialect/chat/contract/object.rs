//! A Chat response object as the contract reads it, typed or from a tree: its `error`, `usage`
//! and `choices` (`null` counts as absent) and whether it was an object at all. A buffered
//! document ([`super::members::Members`]) and a stream chunk ([`super::chunk::Chunk`]) differ
//! only in what one choice holds, which [`ChoiceRead`] says.
//!
//! Input: JSON text, or a tree already parsed. Output: [`Object`], whose choices the rules walk
//! as the choice type's view. The typed read refuses what a full `Value` reads differently (not
//! an object, a member given twice, anything the choice type refuses); the caller then parses a
//! tree and takes [`Object::of`] it, so verdicts are those of a full `Value`. The typed read
//! is first tried by [`json_scan`] (each choice type says how in [`ChoiceRead::scan`]), then by
//! serde's derived read where the scan gives up; the tests compare the two.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::engine::dialect::common;
use crate::engine::json_scan::{self, Scan, Seen};
use crate::engine::report::KeptJson;

/// One choice read typed, and how either read of it is viewed.
pub trait ChoiceRead: DeserializeOwned {
    type View<'a>
    where
        Self: 'a;

    /// The typed read of one choice without serde ([`json_scan`]): what serde's derived read
    /// gives, or `None` where the scan gives up (serde then reads the whole text).
    fn scan(scan: &mut Scan) -> Option<Self>;

    fn typed_view(&self) -> Self::View<'_>;

    /// The view of a tree's choice (any JSON value: one that is not an object has no members).
    fn tree_view(choice: &Value) -> Self::View<'_>;
}

/// What the contract reads of a response object whose choices are read as `C`.
#[derive(Debug)]
pub struct Object<C> {
    /// Whether it was a JSON object (a pointer to `/choices` needs one).
    pub object: bool,
    pub error: Option<Value>,
    /// Its text when the scan read it (kept as text: nothing reads it on a clean exchange).
    pub usage: Option<KeptJson>,
    choices: Choices<C>,
}

#[derive(Debug)]
enum Choices<C> {
    Typed(Option<Vec<C>>),
    Tree(Option<Value>),
}

#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "C: DeserializeOwned"))]
struct Typed<C> {
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    usage: Option<KeptJson>,
    #[serde(default)]
    choices: Option<Vec<C>>,
}

impl<C: ChoiceRead> Object<C> {
    /// The typed read of `text`; `None` when it refuses (see the module doc) or `text` is not
    /// JSON. Text, not bytes: serde_json then skips checking each string it reads for UTF-8
    /// (see docs/benchmarks.md#text-not-bytes).
    pub fn typed(text: &str) -> Option<Object<C>> {
        // A derived struct would also accept an array of its members: objects only.
        if text.trim_ascii_start().as_bytes().first() != Some(&b'{') {
            return None;
        }
        let typed = Self::scanned(text).or_else(|| serde_json::from_str::<Typed<C>>(text).ok())?;
        Some(Object {
            object: true,
            error: typed.error,
            usage: typed.usage,
            choices: Choices::Typed(typed.choices),
        })
    }

    /// The typed read by [`json_scan`] (the usage kept as its text), or `None` where it gives
    /// up.
    fn scanned(text: &str) -> Option<Typed<C>> {
        let mut scan = Scan::new(text);
        let (mut error, mut usage, mut choices) = (None, None, None);
        let mut seen = Seen::default();
        scan.object(|scan, key| {
            match key {
                "error" => {
                    seen.first(0)?;
                    error = json_scan::optional(scan)?;
                }
                "usage" => {
                    seen.first(1)?;
                    usage = KeptJson::read(scan)?;
                }
                "choices" => {
                    seen.first(2)?;
                    choices = json_scan::optional_with(scan, |scan| scan.items(C::scan))?;
                }
                _ => scan.skip()?,
            };
            Some(())
        })?;
        scan.end()?;
        Some(Typed {
            error,
            usage,
            choices,
        })
    }

    /// The members of a tree already parsed.
    pub fn of(mut value: Value) -> Object<C> {
        Object {
            object: value.is_object(),
            error: common::take_member(&mut value, "error"),
            usage: common::take_member(&mut value, "usage").map(KeptJson::from),
            choices: Choices::Tree(common::take_member(&mut value, "choices")),
        }
    }

    /// The choices, in array order; `None` when `choices` is absent, `null` or not an array.
    pub fn choices(&self) -> Option<impl Iterator<Item = C::View<'_>>> {
        let (typed, tree): (&[C], &[Value]) = match &self.choices {
            Choices::Typed(choices) => (choices.as_ref()?, &[]),
            Choices::Tree(choices) => (&[], choices.as_ref()?.as_array()?),
        };
        let typed = typed.iter().map(C::typed_view);
        Some(typed.chain(tree.iter().map(C::tree_view)))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{chunk, members};
    use super::*;
    use crate::engine::dialect::chat::edited_text::edited;

    /// A typed read, comparable however its usage was kept (a tree from serde, text from the
    /// scan): the usage as its tree.
    fn described<C: std::fmt::Debug>(typed: &Typed<C>) -> String {
        let usage = typed.usage.as_ref().map(|usage| usage.value().into_owned());
        format!("{:?} {usage:?} {:?}", typed.error, typed.choices)
    }

    /// serde's derived read, as the scan must give it whenever it gives anything.
    fn by_serde<C: ChoiceRead + std::fmt::Debug>(text: &str) -> Option<String> {
        serde_json::from_str::<Typed<C>>(text)
            .ok()
            .map(|typed| described(&typed))
    }

    fn by_scan<C: ChoiceRead + std::fmt::Debug>(text: &str) -> Option<String> {
        Object::<C>::scanned(text).map(|typed| described(&typed))
    }

    const TAKEN: &[&str] = &[
        r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","sent_ns":1764800000000000000,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\""}}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,"cost":0.0012,"details":{"cached":[1,-2,3.5e2]}}}"#,
        r#" { "choices" : [ { "index" : 0 , "delta" : { "content" : "h\u00e9\n" } , "finish_reason" : "stop" } ] , "error" : null } "#,
        r#"{"choices":[{"index":null,"delta":null,"message":null,"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":"0","delta":{"content":7,"function_call":{"name":"f"},"tool_calls":null}}]}"#,
        r#"{"choices":[{"index":0,"message":{"tool_calls":[{"index":null,"id":null,"type":null,"function":null,"custom":{"name":null,"input":{"k":[true,false]}}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":{"a":1,"a":2}}},{}]}}]}"#,
        r#"{"error":{"message":"boom","code":"x"},"choices":[]}"#,
        r#"{"id":"no choices"}"#,
        "{}",
    ];

    const LEFT: &[&str] = &[
        r#"{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"content":"b"}}]}"#,
        r#"{"choices":[{"index":0,"message":{"content":"a"},"message":null}]}"#,
        r#"{"choices":[{"index":0,"index":1}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"d","content":null}}]}"#,
        r#"{"choices":[],"choices":[]}"#,
        r#"{"usage":{"a":1},"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","extra":1}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":"f"}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","id":"b"}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":{"index":0}}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[7]}}]}"#,
        r#"{"choices":[{"index":0,"delta":"text"}]}"#,
        r#"{"choices":[1,null]}"#,
        r#"{"choices":[[0,{"content":"x"},null]]}"#,
        r#"{"choices":{"index":0}}"#,
        r#"[{"choices":[]}]"#,
        r#""a string""#,
        r#"{"choices":[]} trailing"#,
        r#"{"choices":[{"index":0}]"#,
        r#"{"ch\u006fices":[]}"#,
        r#"{"id":"\ud800","choices":[]}"#,
        r#"{"usage":{"n":1e999},"choices":[]}"#,
        r#"{"created":01,"choices":[]}"#,
    ];

    fn compare<C: ChoiceRead + std::fmt::Debug>(text: &str) -> Result<bool, TestCaseError> {
        let scanned = by_scan::<C>(text);
        if scanned.is_some() {
            prop_assert_eq!(&scanned, &by_serde::<C>(text), "{}", text);
        }
        Ok(scanned.is_some())
    }

    #[test]
    fn the_scan_reads_what_serde_reads_and_leaves_the_rest_to_it() {
        for text in TAKEN {
            assert!(compare::<chunk::TypedChoice>(text).unwrap(), "{text}");
            assert!(compare::<members::TypedChoice>(text).unwrap(), "{text}");
        }
        // A chunk's choice skips a `message` (one of these), a document's a `delta`: the
        // document read is given each with `message` for `delta`.
        let chunks_left = LEFT
            .iter()
            .filter(|text| !compare::<chunk::TypedChoice>(text).unwrap())
            .count();
        assert_eq!(chunks_left, LEFT.len() - 1);
        for text in LEFT {
            let text = text.replace(r#""delta""#, r#""message""#);
            assert!(!compare::<members::TypedChoice>(&text).unwrap(), "{text}");
        }
        // The ones left that serde takes (an escaped key, a lone surrogate or an
        // out-of-range number in a member it skips, an array for a choice): serde decides.
        let serde_takes = LEFT
            .iter()
            .filter(|text| by_serde::<chunk::TypedChoice>(text).is_some())
            .count();
        assert_eq!(serde_takes, 5);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        #[test]
        fn an_edited_chunk_or_body_is_taken_only_as_serde_takes_it(
            pick in 0..TAKEN.len() + LEFT.len(),
            at: usize,
            edit in 0u8..60,
            twice: bool,
        ) {
            let original = TAKEN.iter().chain(LEFT).nth(pick).unwrap();
            let mut text = original.to_string();
            for round in 0..(1 + usize::from(twice)) {
                text = edited(&text, at / (round + 1), edit);
            }
            compare::<chunk::TypedChoice>(&text)?;
            compare::<members::TypedChoice>(&text)?;
        }
    }
}

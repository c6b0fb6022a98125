//! Parses the chat/completions request body into the facts the contract needs.
//!
//! Input: the raw request bytes handed to [`crate::engine::Exchange::new`]. Output: a
//! serializable [`RequestFacts`] for the report, the [`ToolChoice`] the rules check against, and
//! the raw `tools` array that [`crate::engine::schema::SchemaCache`] compiles.

use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::dialect::common;
use crate::engine::json_scan::{self, Scan, Seen};
use crate::engine::report::{KeptJson, RequestFacts};
use crate::engine::schema::{CompiledTools, Declaration, SchemaCache, ToolReading};

/// The request's `tool_choice`, interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// Absent: `auto` when tools are declared.
    Unspecified,
    None,
    Auto,
    Required,
    /// `{"type":"function","function":{"name":...}}` or `{"type":"custom","custom":{"name":...}}`.
    Named(String),
    /// Something else (`allowed_tools`, checked by [`super::surface`]; an unknown string): not
    /// checked here.
    Unchecked,
}

/// A member's value exactly as sent (serde's `RawValue` holds the same text): read by
/// [`json_scan`] without serde reading it a second time, or by serde where the scan gives up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawJson(Box<str>);

impl RawJson {
    /// The value's text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// A value's compact text, as `serde_json::value::to_raw_value` writes it.
    fn of(value: Value) -> Option<RawJson> {
        serde_json::to_string(&value)
            .ok()
            .map(|text| RawJson(text.into()))
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawJson, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Ok(RawJson(raw.get().into()))
    }
}

/// The parsed request: facts plus what the rules and the schema cache need.
#[derive(Debug, Clone)]
pub struct ParsedRequest {
    pub facts: RequestFacts,
    pub choice: ToolChoice,
    /// The `tools` value exactly as sent (compiled, and checked for being a non-empty array,
    /// by the schema cache).
    pub tools: Option<RawJson>,
    /// `tools` compiled, when the read found its text among the cache's recent arrays
    /// ([`SchemaCache::known_at`]) and so did not read it.
    pub known_tools: Option<Arc<CompiledTools>>,
    /// The legacy `functions` value exactly as sent (compiled by the schema cache too).
    pub functions: Option<RawJson>,
    /// The legacy `function_call` exactly as sent.
    pub function_call: Option<Value>,
}

/// The fields of a request body the contract reads. Every other key (`messages`, most of a
/// request's bytes) is skipped by serde without building a tree: parsing the whole body into a
/// `Value` was the engine's largest per-request cost in the benchmark's profile.
#[derive(Deserialize, Default)]
struct Fields {
    model: Option<Value>,
    stream: Option<Value>,
    tools: Option<RawJson>,
    tool_choice: Option<KeptJson>,
    parallel_tool_calls: Option<Value>,
    stream_options: Option<Value>,
    functions: Option<RawJson>,
    function_call: Option<Value>,
    #[serde(skip)]
    known_tools: Option<Arc<CompiledTools>>,
}

impl Fields {
    /// The body's fields, or `None` when it is not one JSON object.
    fn read(body: &[u8], cache: Option<&SchemaCache>) -> Option<Fields> {
        let scanned = |text| Fields::scanned(text, cache);
        common::read_fields(body, scanned, Fields::by_serde)
    }

    /// The fields as serde reads them; a member given twice as a `Value` reads it.
    fn by_serde(body: &[u8]) -> Option<Fields> {
        match common::from_json_bytes::<Fields>(body) {
            Ok(fields) => Some(fields),
            // Duplicate keys are an error for a derived struct; a Value keeps the last one,
            // as JSON parsers commonly do.
            Err(_) => match serde_json::from_slice::<Value>(body).ok()? {
                Value::Object(mut map) => Some(Fields {
                    model: map.remove("model"),
                    stream: map.remove("stream"),
                    tools: map.remove("tools").and_then(RawJson::of),
                    tool_choice: map.remove("tool_choice").map(KeptJson::from),
                    parallel_tool_calls: map.remove("parallel_tool_calls"),
                    stream_options: map.remove("stream_options"),
                    functions: map.remove("functions").and_then(RawJson::of),
                    function_call: map.remove("function_call"),
                    known_tools: None,
                }),
                _ => None,
            },
        }
    }
}

impl Fields {
    /// The fields read by [`json_scan`] (no derived visitor, the skipped members checked as
    /// serde checks them), or `None` where it gives up (a member given twice, anything it
    /// does not take): serde then reads the body. A `tools` array among `cache`'s recent ones
    /// is stepped over, not read, and comes with its compiled tools.
    fn scanned(text: &str, cache: Option<&SchemaCache>) -> Option<Fields> {
        let mut fields = Fields::default();
        let mut seen = Seen::default();
        let mut scan = Scan::new(text);
        let raw = |scan: &mut Scan| {
            json_scan::optional_with(scan, |scan| Some(RawJson(scan.raw_text()?.into())))
        };
        scan.object(|scan, key| {
            let f = &mut fields;
            match key {
                "model" => seen.fill(0, &mut f.model, json_scan::optional(scan)),
                "stream" => seen.fill(1, &mut f.stream, json_scan::optional(scan)),
                // Written out, not through `common::scan_tools`: on this path (every Chat
                // request) the helper costs more (docs/benchmarks.md#anthropic-history).
                "tools" => {
                    let known = cache
                        .and_then(|cache| scan.known_text(|rest| cache.known_at(rest, &TOOLS)));
                    match known {
                        Some((text, compiled)) => {
                            f.known_tools = Some(compiled);
                            seen.fill(2, &mut f.tools, Some(Some(RawJson(text.into()))))
                        }
                        None => seen.fill(2, &mut f.tools, raw(scan)),
                    }
                }
                "tool_choice" => seen.fill(3, &mut f.tool_choice, KeptJson::read(scan)),
                "parallel_tool_calls" => {
                    seen.fill(4, &mut f.parallel_tool_calls, json_scan::optional(scan))
                }
                "stream_options" => seen.fill(5, &mut f.stream_options, json_scan::optional(scan)),
                "functions" => seen.fill(6, &mut f.functions, raw(scan)),
                "function_call" => seen.fill(7, &mut f.function_call, json_scan::optional(scan)),
                _ => scan.skip(),
            }
        })?;
        scan.end()?;
        Some(fields)
    }
}

/// Reads a request body. Never fails: an unparsable body gives `parsed: false` and no tools.
pub fn parse_request(body: &[u8]) -> ParsedRequest {
    parse_request_with(body, None)
}

/// As [`parse_request`], a `tools` array among `cache`'s recent ones compiled without being
/// read ([`ParsedRequest::known_tools`]).
pub fn parse_request_with(body: &[u8], cache: Option<&SchemaCache>) -> ParsedRequest {
    let Some(fields) = Fields::read(body, cache) else {
        return ParsedRequest {
            facts: RequestFacts::default(),
            choice: ToolChoice::Unspecified,
            tools: None,
            known_tools: None,
            functions: None,
            function_call: None,
        };
    };
    let Fields {
        model,
        stream,
        tools,
        tool_choice,
        parallel_tool_calls,
        stream_options,
        functions,
        function_call,
        known_tools,
    } = fields;
    let choice = match &tool_choice {
        Some(KeptJson::Text(text)) => interpret_choice_text(text),
        Some(KeptJson::Tree(tree)) => interpret_choice(Some(tree)),
        None => ToolChoice::Unspecified,
    };
    // `tools` is filled from the compiled tools by `ChatState::new` (cached per distinct array).
    let facts = RequestFacts {
        tool_choice,
        parallel_tool_calls: parallel_tool_calls.as_ref().and_then(Value::as_bool),
        include_usage: stream_options
            .as_ref()
            .and_then(|options| options.get("include_usage"))
            .and_then(Value::as_bool),
        ..common::facts(model.as_ref(), stream.as_ref())
    };
    ParsedRequest {
        facts,
        choice,
        tools,
        known_tools,
        functions,
        function_call,
    }
}

/// How Chat's `tools` array declares function tools: `{"type":"function","function":{"name",
/// "parameters"}}`; custom tools' grammars nested (`custom.format`).
pub const TOOLS: ToolReading = ToolReading {
    key_prefix: "",
    tool: |tool, position| {
        Some(Declaration {
            name: function_name(tool)?,
            parameters_path: format!("/tools/{position}/function/parameters"),
            parameters: tool.get("function").and_then(|f| f.get("parameters")),
        })
    },
    grammars: Some(true),
};

/// The function name of a `{"type":"function","function":{"name":...}}` tool declaration.
/// A missing `type` is tolerated, as several SDKs and servers do.
pub fn function_name(tool: &Value) -> Option<&str> {
    let kind = tool
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("function");
    if kind != "function" {
        return None;
    }
    tool.get("function")?.get("name")?.as_str()
}

/// `tool_choice` interpreted from the text the scan checked, as [`interpret_choice`] interprets
/// its tree, without building the tree for the common shape (`{"type":"function","function":
/// {"name":...}}`, or `custom` alike); any other shape (a string, a member given twice, an
/// escape, a name that is not a plain string) is read into the tree and interpreted there.
fn interpret_choice_text(text: &str) -> ToolChoice {
    named_choice(text).unwrap_or_else(|| {
        let tree = serde_json::from_str::<Value>(text).ok();
        interpret_choice(tree.as_ref())
    })
}

/// The common shape of a named `tool_choice` read from its text, or `None` (see
/// [`interpret_choice_text`]).
fn named_choice(text: &str) -> Option<ToolChoice> {
    let mut scan = Scan::new(text);
    if scan.peek()? != b'{' {
        return None;
    }
    let mut kind = None;
    // The `name` of the `function` and of the `custom` member: absent, or present with a
    // name (`Some(Some)`) or without one (`Some(None)`).
    let (mut function, mut custom) = (None, None);
    let mut seen = Seen::default();
    scan.object(|scan, key| {
        match key {
            "type" => {
                seen.first(0)?;
                kind = Some(scan.plain_string()?);
            }
            "function" => {
                seen.first(1)?;
                function = Some(name_member(scan)?);
            }
            "custom" => {
                seen.first(2)?;
                custom = Some(name_member(scan)?);
            }
            _ => scan.skip()?,
        }
        Some(())
    })?;
    scan.end()?;
    let name = match kind {
        Some("function") => function.flatten(),
        Some("custom") => custom.flatten(),
        _ => None,
    };
    Some(name.map_or(ToolChoice::Unchecked, |name| {
        ToolChoice::Named(name.to_owned())
    }))
}

/// The `name` of an object member when it is a plain string (`Some(None)`: no such name, or
/// not an object); `None` when the scan gives up.
fn name_member<'a>(scan: &mut Scan<'a>) -> Option<Option<&'a str>> {
    if scan.peek()? != b'{' {
        scan.skip()?;
        return Some(None);
    }
    let mut name = None;
    let mut seen = Seen::default();
    scan.object(|scan, key| {
        if key != "name" {
            return scan.skip();
        }
        seen.first(0)?;
        if scan.peek()? == b'"' {
            name = Some(scan.plain_string()?);
            Some(())
        } else {
            scan.skip()
        }
    })?;
    Some(name)
}

fn interpret_choice(choice: Option<&Value>) -> ToolChoice {
    match choice {
        None | Some(Value::Null) => ToolChoice::Unspecified,
        Some(Value::String(mode)) => match mode.as_str() {
            "none" => ToolChoice::None,
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            _ => ToolChoice::Unchecked,
        },
        Some(object) => {
            // A named function, or a named custom tool (`{"type":"custom","custom":{"name"}}`):
            // either way exactly that tool must be called.
            let kind = object.get("type").and_then(Value::as_str);
            let name = kind
                .filter(|kind| matches!(*kind, "function" | "custom"))
                .and_then(|kind| object.get(kind))
                .and_then(|inner| inner.get("name"))
                .and_then(Value::as_str);
            match name {
                Some(name) => ToolChoice::Named(name.to_owned()),
                None => ToolChoice::Unchecked,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dialect::chat::edited_text::edited;

    #[test]
    fn reads_the_seed_forced_request() {
        let body = br#"{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"stream":true,"stream_options":{"include_usage":true},"parallel_tool_calls":false}"#;
        let parsed = parse_request(body);
        assert!(parsed.facts.parsed);
        assert_eq!(parsed.choice, ToolChoice::Named("get_weather".to_owned()));
        assert!(parsed.facts.stream);
        assert_eq!(parsed.facts.include_usage, Some(true));
        assert_eq!(parsed.facts.parallel_tool_calls, Some(false));
        assert!(parsed.tools.is_some());
    }

    const CHOICES: &[&str] = &[
        r#"{"type":"function","function":{"name":"get_weather"}}"#,
        r#" { "function" : { "strict" : true , "name" : "f" } , "type" : "function" } "#,
        r#"{"type":"custom","custom":{"name":"patch"}}"#,
        r#"{"type":"custom","function":{"name":"f"}}"#,
        r#"{"type":"function"}"#,
        r#"{"type":"function","function":"f"}"#,
        r#"{"type":"function","function":{"name":7}}"#,
        r#"{"type":"function","function":{}}"#,
        r#"{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}"#,
        r#"{"type":7,"function":{"name":"f"}}"#,
        r#"{"type":"\u0066unction","function":{"name":"f"}}"#,
        r#"{"type":"function","function":{"name":"f\u00e9"}}"#,
        r#"{"type":"function","type":"custom","custom":{"name":"c"}}"#,
        r#"{"type":"function","function":{"name":"a","name":"b"}}"#,
        r#"{"t\u0079pe":"function","function":{"name":"f"}}"#,
        r#""auto""#,
        r#""required""#,
        r#""none""#,
        r#""sometimes""#,
        "null",
        "[1]",
        "{}",
    ];

    /// What the tree gives: the text read as the rules read a tree.
    fn by_tree(text: &str) -> ToolChoice {
        interpret_choice(serde_json::from_str::<Value>(text).ok().as_ref())
    }

    #[test]
    fn a_choice_read_from_its_text_is_the_choice_its_tree_gives() {
        for text in CHOICES {
            assert_eq!(interpret_choice_text(text), by_tree(text), "{text}");
        }
        // The common shapes are read without a tree; escapes and repeats go to the tree.
        assert!(named_choice(CHOICES[0]).is_some());
        assert!(named_choice(CHOICES[1]).is_some());
        assert!(named_choice(CHOICES[10]).is_none());
        assert!(named_choice(CHOICES[12]).is_none());
    }

    /// Every field of a read, comparable.
    fn described(fields: &Fields) -> String {
        let raw = |raw: &Option<RawJson>| raw.as_ref().map(|raw| raw.get().to_owned());
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            fields.model,
            fields.stream,
            raw(&fields.tools),
            (fields.tool_choice.as_ref()).map(|choice| choice.value().into_owned()),
            fields.parallel_tool_calls,
            fields.stream_options,
            raw(&fields.functions),
            fields.function_call
        )
    }

    fn by_serde(text: &str) -> Option<String> {
        serde_json::from_str::<Fields>(text)
            .ok()
            .map(|fields| described(&fields))
    }

    const BODIES: &[&str] = &[
        r#"{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \"q\""}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"stream":true,"stream_options":{"include_usage":true},"parallel_tool_calls":false}"#,
        r#" { "tools" : null , "functions" : [ {"name":"g"} ] , "function_call" : "auto" , "model" : 7 } "#,
        r#"{"messages":[],"tools":[],"n":1.5e3,"logit_bias":{"50256":-100}}"#,
        r#"{}"#,
        r#"{"model":"a","model":"b"}"#,
        r#"{"tools":[1],"tools":[2]}"#,
        r#"{"messages":[{"content":"\ud800"}]}"#,
        r#"{"tools":[{"a":"\ud800"}]}"#,
        r#"{"model":"m"} trailing"#,
        r#"{"n":01}"#,
    ];

    #[test]
    fn the_scan_reads_the_fields_serde_reads_and_leaves_the_rest_to_it() {
        let mut taken = 0;
        for body in BODIES {
            if let Some(fields) = Fields::scanned(body, None) {
                taken += 1;
                assert_eq!(Some(described(&fields)), by_serde(body), "{body}");
            }
        }
        // The first four; not the duplicated keys, a lone surrogate in a skipped member or in
        // `tools` (the scan checks a raw value as it skips one), the trailing text or the
        // leading zero.
        assert_eq!(taken, 4);
        assert!(Fields::scanned(BODIES[7], None).is_none());
        // serde reads that one, and takes the lone surrogate in the raw text.
        let read = Fields::read(BODIES[7].as_bytes(), None).map(|fields| described(&fields));
        assert_eq!(read, by_serde(BODIES[7]));
        assert!(parse_request(BODIES[7].as_bytes()).tools.is_some());
    }

    /// A cache holding, admitted, the `tools` text of every body of [`BODIES`] that has one.
    fn cached_tools() -> SchemaCache {
        let cache = SchemaCache::default();
        for body in BODIES {
            if let Some(tools) = Fields::read(body.as_bytes(), None).and_then(|f| f.tools) {
                cache.tools_for_text(tools.get(), &TOOLS).admit();
            }
        }
        cache
    }

    #[test]
    fn a_cached_tools_array_is_stepped_over_and_handed_out_compiled() {
        let cache = cached_tools();
        let body = BODIES[0];
        let fields = Fields::scanned(body, Some(&cache)).expect("scanned");
        let known = fields.known_tools.as_ref().expect("known from the cache");
        let tools = fields.tools.as_ref().expect("tools text");
        assert!(Arc::ptr_eq(
            known,
            &cache.tools_for_text(tools.get(), &TOOLS)
        ));
        assert_eq!(Some(described(&fields)), by_serde(body));
        // The same array with other white space, or another array, is read, not known.
        let spaced = body.replace(r#""tools":[{"#, r#""tools":[ {"#);
        let fields = Fields::scanned(&spaced, Some(&cache)).expect("scanned");
        assert!(fields.known_tools.is_none() && fields.tools.is_some());
        // A cached array's text followed by more than the body's grammar allows is refused as
        // without the cache (the scan goes on after the array it stepped over).
        let broken = body.replace(r#"}}}],"tool_choice""#, r#"}}}]]"tool_choice""#);
        assert!(Fields::scanned(&broken, Some(&cache)).is_none());
        assert!(Fields::read(broken.as_bytes(), Some(&cache)).is_none());
        // A request read with the cache is the request read without it, tools compiled once.
        let with = parse_request_with(body.as_bytes(), Some(&cache));
        let without = parse_request(body.as_bytes());
        assert_eq!(format!("{:?}", with.facts), format!("{:?}", without.facts));
        assert_eq!(with.choice, without.choice);
        assert_eq!(with.tools, without.tools);
        assert!(with.known_tools.is_some() && without.known_tools.is_none());
    }

    #[test]
    fn an_evicted_array_is_no_longer_known() {
        let cache = SchemaCache::with_capacity(1);
        let first = r#"{"tools":[{"type":"function","function":{"name":"a"}}]}"#;
        let second = r#"{"tools":[{"type":"function","function":{"name":"b"}}]}"#;
        for body in [first, second] {
            let tools = Fields::read(body.as_bytes(), None)
                .and_then(|f| f.tools)
                .expect("tools");
            cache.tools_for_text(tools.get(), &TOOLS).admit();
        }
        let known = |body: &str| {
            Fields::read(body.as_bytes(), Some(&cache)).map(|f| f.known_tools.is_some())
        };
        assert_eq!(known(first), Some(false));
        assert_eq!(known(second), Some(true));
    }

    proptest::proptest! {
        #[test]
        fn an_edited_body_is_read_by_the_scan_only_as_serde_reads_it(
            pick in 0..BODIES.len(),
            at: usize,
            edit in 0u8..45,
        ) {
            let text = edited(BODIES[pick], at, edit);
            if let Some(fields) = Fields::scanned(&text, None) {
                proptest::prop_assert_eq!(Some(described(&fields)), by_serde(&text), "{}", text);
            }
        }

        #[test]
        fn an_edited_body_is_read_alike_whether_or_not_its_tools_are_cached(
            pick in 0..BODIES.len(),
            at: usize,
            edit in 0u8..45,
        ) {
            let cache = cached_tools();
            let text = edited(BODIES[pick], at, edit);
            let read = |cache| Fields::read(text.as_bytes(), cache).map(|f| described(&f));
            proptest::prop_assert_eq!(read(Some(&cache)), read(None), "{}", text);
        }

        #[test]
        fn an_edited_choice_is_read_as_its_tree_reads_it(
            pick in 0..CHOICES.len(),
            at: usize,
            edit in 0u8..45,
        ) {
            let text = edited(CHOICES[pick], at, edit);
            // Only text the request's scan would keep: checked as its tree would be read.
            let mut scan = Scan::new(&text);
            if scan.value_text().is_some() && scan.end().is_some() {
                proptest::prop_assert_eq!(interpret_choice_text(&text), by_tree(&text), "{}", text);
            }
        }
    }

    #[test]
    fn garbage_and_toolless_requests_declare_nothing() {
        let garbage = parse_request(b"not json");
        assert!(!garbage.facts.parsed && garbage.tools.is_none());
        let toolless = parse_request(br#"{"messages":[],"tool_choice":"required"}"#);
        assert!(toolless.facts.parsed && toolless.tools.is_none());
        assert_eq!(toolless.choice, ToolChoice::Required);
    }

    #[test]
    fn only_objects_are_requests_and_the_last_duplicate_key_wins() {
        assert!(!parse_request(br#"["gpt", true]"#).facts.parsed);
        assert!(!parse_request(b"  \"text\"").facts.parsed);
        let duplicated = parse_request(br#"{"model":"a","stream":false,"model":"b"}"#);
        assert!(duplicated.facts.parsed);
        assert_eq!(duplicated.facts.model.as_deref(), Some("b"));
        // Whatever the messages hold, they are skipped, never judged.
        let messy = parse_request(br#"{"messages":[{"content":[1,{"x":[null]}]}],"stream":true}"#);
        assert!(messy.facts.parsed && messy.facts.stream);
    }
}

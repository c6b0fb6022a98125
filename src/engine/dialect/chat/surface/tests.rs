//! The request side of the wider Chat surface: which answer shape a request expects, and the
//! nested custom-tool and allowed-tools shapes.

use super::*;
use crate::engine::SeverityOverrides;
use crate::engine::dialect::chat::request::parse_request;

fn read(body: &str) -> (Surface, Vec<RuleId>) {
    let cache = SchemaCache::default();
    let mut sink = ViolationSink::new(SeverityOverrides::default());
    let request = parse_request(body.as_bytes());
    let tools = request
        .tools
        .as_ref()
        .map(|raw| cache.tools_for_text(raw.get(), &crate::engine::dialect::chat::request::TOOLS));
    let surface = Surface::new(
        &cache,
        &request,
        body.as_bytes(),
        tools.as_deref(),
        &mut sink,
    );
    let rules = sink.into_vec().into_iter().map(|v| v.rule).collect();
    (surface, rules)
}

#[test]
fn the_declarations_decide_the_expected_answer_shape() {
    let tools = r#"{"tools":[{"type":"function","function":{"name":"f"}}]}"#;
    let functions = r#"{"functions":[{"name":"f"}],"function_call":{"name":"f"}}"#;
    let both =
        r#"{"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"f"}}]}"#;
    let null = r#"{"functions":null,"tools":null,"function_call":null}"#;
    assert_eq!(read(tools).0.mode, Mode::Tools);
    let (legacy, rules) = read(functions);
    assert_eq!(legacy.mode, Mode::Functions);
    assert_eq!(legacy.function_call, FunctionCall::Named("f".to_owned()));
    assert!(legacy.functions.is_some_and(|f| f.get("f").is_some()));
    assert!(rules.is_empty(), "{rules:?}");
    let (mixed, rules) = read(both);
    assert_eq!(mixed.mode, Mode::Both);
    assert_eq!(rules, [RuleId::ChatLegacyRequestMixedFunctionsAndTools]);
    let (absent, rules) = read(null);
    assert_eq!(absent.mode, Mode::Neither);
    assert_eq!(absent.function_call, FunctionCall::Unspecified);
    assert!(rules.is_empty());
}

#[test]
fn custom_tools_are_nested_and_their_grammars_closed() {
    let body = r#"{"tools":[
        {"type":"custom","custom":{"name":"free"}},
        {"type":"custom","custom":{"name":"text","format":{"type":"text"}}},
        {"type":"custom","custom":{"name":"lark","format":{"type":"grammar","grammar":{"syntax":"lark","definition":"start: /.+/"}}}},
        {"type":"custom","custom":{"name":"re","format":{"type":"grammar","grammar":{"syntax":"regex","definition":"[a-z]+"}}}},
        {"type":"custom","custom":{"name":"flat","format":{"type":"grammar","syntax":"regex","definition":".+"}}},
        {"type":"custom","custom":{"name":"extra","format":{"type":"text","strict":true}}},
        {"type":"custom","custom":{"name":"broken","format":{"type":"grammar","grammar":{"syntax":"regex","definition":"("}}}},
        {"type":"custom","name":"responses_style"}
    ]}"#;
    let (surface, rules) = read(body);
    let names: Vec<&str> = surface.custom.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["broken", "extra", "flat", "free", "lark", "re", "text"]
    );
    let Some(RegexGrammar::Compiled(re)) = &surface.custom["re"] else {
        panic!("a regex grammar compiles: {:?}", surface.custom["re"]);
    };
    assert!(re.is_match("abc") && !re.is_match("abc1"));
    assert!(surface.custom["lark"].is_none() && surface.custom["text"].is_none());
    assert_eq!(
        rules,
        [
            RuleId::ChatCustomRequestGrammarShapeInvalid,
            RuleId::ChatCustomRequestGrammarShapeInvalid,
            RuleId::ChatCustomRequestGrammarShapeInvalid,
            RuleId::ChatCustomRequestToolShapeInvalid,
        ]
    );
}

#[test]
fn allowed_tools_are_read_from_the_nested_shape_only() {
    let nested = r#"{"tools":[{"type":"custom","custom":{"name":"p"}}],
        "tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"custom","custom":{"name":"p"}}]}}}"#;
    let (surface, rules) = read(nested);
    assert_eq!(
        surface.allowed,
        Some(Allowed {
            required: true,
            names: vec!["p".to_owned()]
        })
    );
    assert!(rules.is_empty(), "{rules:?}");
    let bad_mode =
        r#"{"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"any","tools":[]}}}"#;
    let (surface, rules) = read(bad_mode);
    assert_eq!(surface.allowed, None);
    assert_eq!(rules, [RuleId::ChatAllowedRequestShapeInvalid]);
}

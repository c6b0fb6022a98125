//! Arbitrary input never panics the analysis code: random and half-structured bytes through the
//! engine (every dialect, every content type and encoding, any chunking) and through the
//! recording reader.
//! A deterministic complement to the fuzz targets: it runs in every `cargo test`.

use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use tooltap::engine::{BodyEnd, Dialect, EngineConfig, Exchange, ResponseHead, SchemaCache};

/// Pieces that look like the real thing, so random combinations reach deep into the rules.
fn sse_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("data: ".to_string()),
        Just("data: [DONE]\n\n".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\r".to_string()),
        Just(": ping\n\n".to_string()),
        Just("{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":".to_string()),
        Just("0,\"id\":\"c\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"".to_string()),
        Just("{\\\"city\\\":".to_string()),
        Just("}}]},\"finish_reason\":\"tool_calls\"}]}".to_string()),
        Just("\"error\":{\"message\":\"x\"}".to_string()),
        Just("event: response.output_item.added\n".to_string()),
        Just("{\"type\":\"response.output_item.added\",\"sequence_number\":".to_string()),
        Just(",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"c\",\"name\":\"get_weather\",\"arguments\":\"\"}}".to_string()),
        Just("{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"".to_string()),
        Just("{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"custom_tool_call\",\"id\":\"fc_1\",\"input\":5}}".to_string()),
        Just("{\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[".to_string()),
        Just("{\"type\":\"error\"}".to_string()),
        Just("event: content_block_start\n".to_string()),
        Just("{\"type\":\"message_start\",\"message\":{\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}".to_string()),
        Just("{\"type\":\"content_block_start\",\"index\":".to_string()),
        Just(",\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}".to_string()),
        Just("{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"".to_string()),
        Just("{\"type\":\"content_block_stop\",\"index\":18446744073709551615}".to_string()),
        Just("{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":-3}}".to_string()),
        Just("{\"type\":\"message_stop\"}".to_string()),
        Just("-1".to_string()),
        Just("null".to_string()),
        "[ -~]{0,12}",
        any::<u8>().prop_map(|b| String::from_utf8_lossy(&[b]).into_owned()),
    ]
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(br#"{"model":"m","stream":true,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"required"}"#.to_vec()),
        Just(br#"{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":5}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}"#.to_vec()),
        Just(br#"{"tools":[{"function":{"name":"r","parameters":{"$ref":"https://example.invalid/s.json"}}}]}"#.to_vec()),
        Just(br#"{"stream":true,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"custom","name":"p","format":{"type":"grammar","syntax":"regex","definition":"a+("}},{"type":"custom","name":"q","format":{"type":"grammar","syntax":"regex","definition":"[a-z]+"}}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"custom","name":"q"}]},"parallel_tool_calls":false}"#.to_vec()),
        Just(br#"{"stream":true,"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"eager_input_streaming":true},{"type":"web_search_20250305","name":"s"}],"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true},"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","input":"x"}]},{"role":"user","content":[{"type":"text"},{"type":"tool_result","tool_use_id":5}]}]}"#.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

fn head() -> impl Strategy<Value = ResponseHead> {
    (
        prop_oneof![Just(200u16), Just(500u16)],
        prop_oneof![
            Just(Some("text/event-stream".to_string())),
            Just(Some("application/json".to_string())),
            Just(None)
        ],
        prop_oneof![
            Just(None),
            Just(Some("gzip".to_string())),
            Just(Some("br".to_string())),
            Just(Some("zstd".to_string())),
            Just(Some("deflate".to_string())),
            Just(Some("bogus".to_string()))
        ],
    )
        .prop_map(|(status, content_type, content_encoding)| ResponseHead {
            status,
            content_type,
            content_encoding,
            headers: Vec::new(),
        })
}

fn dialect() -> impl Strategy<Value = Dialect> {
    prop_oneof![
        Just(Dialect::Chat),
        Just(Dialect::Responses),
        Just(Dialect::Anthropic)
    ]
}

fn run(
    dialect: Dialect,
    request: &[u8],
    head: ResponseHead,
    body: &[u8],
    cuts: &[usize],
    complete: bool,
) {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let mut exchange = Exchange::with_dialect(&config, &cache, dialect, request);
    exchange.response_head(head);
    let mut start = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    for cut in cuts {
        exchange.feed(&body[start..cut.max(start)]);
        start = cut.max(start);
    }
    exchange.feed(&body[start..]);
    let _ = exchange.violations();
    // Every ending, chosen by the input: a cut body judged as received is the harshest.
    let end = if complete {
        BodyEnd::Complete
    } else {
        [BodyEnd::UpstreamBroke, BodyEnd::ReaderGone, BodyEnd::Lossy][body.len() % 3]
    };
    let report = exchange.finish(end);
    serde_json::to_string(&report).expect("a report always serializes");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn half_structured_streams_never_panic_the_engine(
        dialect in dialect(),
        request in request(),
        head in head(),
        pieces in proptest::collection::vec(sse_piece(), 0..40),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
        complete in any::<bool>(),
    ) {
        run(dialect, &request, head, pieces.concat().as_bytes(), &cuts, complete);
    }

    #[test]
    fn random_bytes_never_panic_the_engine(
        dialect in dialect(),
        request in request(),
        head in head(),
        body in proptest::collection::vec(any::<u8>(), 0..512),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        run(dialect, &request, head, &body, &cuts, true);
    }

    #[test]
    fn random_bytes_never_panic_the_recording_reader(
        lines in proptest::collection::vec(prop_oneof![
            Just("{\"type\":\"exchange\",\"v\":1}".to_string()),
            Just("{\"type\":\"frame\",\"seq\":0,\"t_us\":1,\"base64\":\"!!\"}".to_string()),
            Just("{\"type\":\"end\"}".to_string()),
            Just("{\"v\":99}".to_string()),
            "[ -~]{0,30}",
        ], 0..8),
        tail in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        let mut bytes = lines.join("\n").into_bytes();
        bytes.extend(tail);
        let _ = tooltap::record::read::parse(Path::new("fuzz.jsonl"), &bytes);
    }
}

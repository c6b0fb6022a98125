//! vcrpy cassettes (format version 1), read and written.
//!
//! Read: `interactions[]`, each a `request` (`method`, `uri`, `headers` as name → list of
//! values, `body` as text, `!!binary` or null) and a `response` (`status.code`, `headers`,
//! `body.string`); pydantic-ai's variant with a structured `parsed_body` in place of either body;
//! LangChain's gzip'd variant whose top level holds parallel `requests` and `responses` lists.
//! The response's `x_tooltap` key, when present, is handed on (see [`super::Extra`]).
//!
//! Write: one cassette per group of recordings, each recording one interaction: the URL the
//! client would have reached without tooltap (upstream base and path), request headers without
//! credentials, the response body as all frames joined, and `x_tooltap` under `response`, the
//! one place vcrpy keeps an unknown key on load and save (an extra key under `request` breaks
//! its loader).

use std::io::Read as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::yaml_read::{self, Node};
use super::yaml_write::Emitter;
use super::{Extra, Foreign, ForeignBody, ForeignError, reason};
use crate::record::Recording;
use crate::record::format::RecordedBody;
use crate::redact::Redactor;

/// The interactions of a cassette's bytes (gzip'd when `gzip`; decompressed to at most
/// `max_bytes`), each an exchange or why it is not one.
pub fn read(
    bytes: &[u8],
    gzip: bool,
    max_bytes: u64,
) -> Result<Vec<Result<Foreign, String>>, ForeignError> {
    let mut inflated = Vec::new();
    let bytes = if gzip {
        flate2::read::GzDecoder::new(bytes)
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut inflated)
            .map_err(|error| ForeignError::Invalid(format!("not gzip: {error}")))?;
        if inflated.len() as u64 > max_bytes {
            return Err(ForeignError::TooLarge);
        }
        &inflated[..]
    } else {
        bytes
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ForeignError::Invalid("not a vcrpy cassette: not UTF-8 text".into()))?;
    let mut documents = yaml_read::load(text).map_err(ForeignError::Invalid)?;
    if documents.is_empty() {
        return Err(ForeignError::Invalid(
            "not a vcrpy cassette: an empty YAML file".into(),
        ));
    }
    // The tree is taken apart as it is read: each body's text moves into its exchange.
    let mut document = documents.swap_remove(0);
    drop(documents);
    if let Some(Node::Seq(interactions)) = document.take("interactions") {
        return Ok(interactions
            .into_iter()
            .map(|mut interaction| {
                let request = interaction.take("request").ok_or("no `request`")?;
                let response = interaction.take("response").ok_or("no `response`")?;
                exchange(request, response)
            })
            .collect());
    }
    if let (Some(Node::Seq(requests)), Some(Node::Seq(responses))) =
        (document.take("requests"), document.take("responses"))
    {
        let unpaired = (requests.len() != responses.len()).then(|| {
            format!(
                "{} requests but {} responses: the unpaired ones are not read",
                requests.len(),
                responses.len()
            )
        });
        let mut out: Vec<_> = requests
            .into_iter()
            .zip(responses)
            .map(|(request, response)| exchange(request, response))
            .collect();
        out.extend(unpaired.map(Err));
        return Ok(out);
    }
    Err(ForeignError::Invalid(
        "not a vcrpy cassette: no `interactions` list (nor LangChain's `requests` and \
         `responses`)"
            .into(),
    ))
}

/// One interaction, taken apart.
fn exchange(mut request: Node, mut response: Node) -> Result<Foreign, String> {
    let method = request
        .take("method")
        .and_then(Node::into_string)
        .ok_or("no `request.method`")?;
    let url = request
        .take("uri")
        .and_then(Node::into_string)
        .ok_or("no `request.uri`")?;
    let request_body = match request.take("parsed_body") {
        Some(parsed) if !parsed.is_null() => Some(ForeignBody::Json(parsed.to_json())),
        _ => request
            .take("body")
            .and_then(scalar_bytes)
            .map(ForeignBody::Bytes),
    };
    // Cassettes written for httpx by vcrpy before 6 hold `status_code` and `content`.
    let status = response
        .get("status")
        .or_else(|| response.get("status_code"))
        .ok_or("no `response.status`")?;
    let status = status
        .get("code")
        .unwrap_or(status)
        .as_u64()
        .and_then(|code| u16::try_from(code).ok())
        .ok_or("`response.status.code` is not a status code")?;
    let body = match response.take("parsed_body") {
        Some(parsed) if !parsed.is_null() => parsed.to_json().to_string().into_bytes(),
        _ => {
            let body = response.take("body").or_else(|| response.take("content"));
            body.map(|mut body| body.take("string").unwrap_or(body))
                .and_then(scalar_bytes)
                .unwrap_or_default()
        }
    };
    Ok(Foreign {
        method,
        url,
        request_headers: headers(request.take("headers")),
        request_body,
        status,
        response_headers: headers(response.take("headers")),
        body,
        started: None,
        extra: response
            .take(super::Format::Vcr.key())
            .map(|extra| extra.to_json()),
    })
}

/// A scalar's bytes: `!!binary` decoded, text as UTF-8; `None` for null or a collection.
fn scalar_bytes(node: Node) -> Option<Vec<u8>> {
    let Node::Scalar(scalar) = node else {
        return None;
    };
    if scalar.is_null() {
        return None;
    }
    if scalar.core_tag.as_deref() == Some("binary") {
        let clean: String = scalar.text.split_whitespace().collect();
        return BASE64.decode(clean).ok();
    }
    Some(scalar.text.into_bytes())
}

/// `{name: [values]}` (or `{name: value}`) as pairs, in file order.
fn headers(node: Option<Node>) -> Vec<(String, String)> {
    let Some(Node::Map(entries)) = node else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, values) in entries {
        match values {
            Node::Seq(values) => out.extend(
                values
                    .into_iter()
                    .filter_map(Node::into_string)
                    .map(|value| (name.clone(), value)),
            ),
            value => out.extend(value.into_string().map(|value| (name, value))),
        }
    }
    out
}

/// A cassette holding `recordings` in the given order, credentials dropped by `redactor`.
pub fn write(recordings: &[&Recording], redactor: &Redactor) -> String {
    let mut emitter = Emitter::default();
    if recordings.is_empty() {
        emitter.out.push_str("interactions: []\n");
    } else {
        emitter.out.push_str("interactions:\n");
    }
    for recording in recordings {
        let meta = &recording.meta;
        let body = recording.body();
        emitter.out.push_str("- request:\n");
        match request_bytes(&meta.request.body, redactor) {
            Some(bytes) => emitter.bytes(4, "body", &bytes),
            None => emitter.null(4, "body"),
        }
        header_map(
            &mut emitter,
            &super::export::request_headers(meta, redactor),
        );
        emitter.string(4, "method", &meta.method);
        emitter.string(4, "uri", &super::export::url(meta));
        emitter.out.push_str("  response:\n");
        emitter.open(4, "body");
        emitter.bytes(6, "string", &body);
        let response_headers = super::export::response_headers(meta, body.len(), redactor);
        header_map(&mut emitter, &response_headers);
        emitter.open(4, "status");
        emitter.number(6, "code", u64::from(meta.response.status));
        emitter.string(6, "message", reason(meta.response.status));
        let extra = serde_json::to_value(Extra::of(recording)).unwrap_or_default();
        emitter.json(4, super::Format::Vcr.key(), &extra);
    }
    emitter.out.push_str("version: 1\n");
    emitter.out
}

/// `headers:` as `name: [values]`, names in first-seen order.
fn header_map(emitter: &mut Emitter, headers: &[(String, String)]) {
    let mut grouped: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, value) in headers {
        match grouped.iter_mut().find(|(seen, _)| *seen == name) {
            Some((_, values)) => values.push(value),
            None => grouped.push((name, vec![value])),
        }
    }
    if grouped.is_empty() {
        emitter.out.push_str("    headers: {}\n");
        return;
    }
    emitter.open(4, "headers");
    for (name, values) in grouped {
        emitter.strings(6, name, &values);
    }
}

/// The request body as the cassette holds it (`None`: not recorded), credential fields
/// redacted again in case the recording was made with redaction configured differently.
pub fn request_bytes(body: &RecordedBody, redactor: &Redactor) -> Option<Vec<u8>> {
    let bytes = body.bytes()?;
    Some(
        redactor
            .as_recorded(&bytes)
            .unwrap_or_else(|| bytes.into_owned()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cassette_with_every_body_kind_reads() {
        let cassette = r#"interactions:
- request:
    body: '{"model":"m","stream":true}'
    headers:
      Content-Type:
      - application/json
      authorization:
      - Bearer sk-secret
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: "data: {\"a\":1}\n\ndata: [DONE]\n\n"
    headers:
      content-type:
      - text/event-stream
    status:
      code: 200
      message: OK
- request:
    parsed_body:
      model: m
      max_tokens: 10
    method: POST
    uri: https://api.anthropic.com/v1/messages
  response:
    parsed_body:
      id: msg_1
      content: []
    status:
      code: 200
      message: OK
- request:
    body: null
    method: GET
    uri: http://h/x
  response:
    body:
      string: !!binary |
        H4sI
    status:
      code: 500
      message: Internal Server Error
version: 1
"#;
        let exchanges = read(cassette.as_bytes(), false, 1 << 20).unwrap();
        let exchanges: Vec<Foreign> = exchanges.into_iter().map(Result::unwrap).collect();
        assert_eq!(exchanges.len(), 3);
        assert_eq!(exchanges[0].body, b"data: {\"a\":1}\n\ndata: [DONE]\n\n");
        assert_eq!(exchanges[0].request_headers.len(), 2);
        let Some(ForeignBody::Json(parsed)) = &exchanges[1].request_body else {
            panic!("no parsed body")
        };
        assert_eq!(parsed["max_tokens"], 10);
        let body: serde_json::Value = serde_json::from_slice(&exchanges[1].body).unwrap();
        assert_eq!(body, serde_json::json!({"id": "msg_1", "content": []}));
        assert_eq!(exchanges[2].body, [0x1f, 0x8b, 0x08]);
        assert_eq!(exchanges[2].status, 500);
        assert!(exchanges[2].request_body.is_none());
    }

    #[test]
    fn a_yaml_that_is_not_a_cassette_says_so() {
        let Err(ForeignError::Invalid(message)) = read(b"name: ci\non: push\n", false, 1 << 20)
        else {
            panic!("read")
        };
        assert!(message.contains("not a vcrpy cassette"), "{message}");
        let Err(ForeignError::Invalid(message)) = read(b"a: [unclosed\n", false, 1 << 20) else {
            panic!("read")
        };
        assert!(message.contains("not YAML"), "{message}");
    }

    #[test]
    fn gzip_is_bounded_after_inflating() {
        use std::io::Write as _;
        let text = format!(
            "requests: []\nresponses: []\npad: \"{}\"\n",
            "x".repeat(10_000)
        );
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(text.as_bytes()).unwrap();
        let gz = encoder.finish().unwrap();
        assert!(gz.len() < 1000);
        assert!(matches!(read(&gz, true, 2000), Err(ForeignError::TooLarge)));
        assert_eq!(read(&gz, true, 1 << 20).unwrap().len(), 0);
    }

    #[test]
    fn langchains_gzipped_requests_and_responses_pair_up() {
        use std::io::Write as _;
        let text = "requests:\n- body: '{\"model\":\"m\"}'\n  headers: {}\n  method: POST\n  \
                    uri: https://api.openai.com/v1/chat/completions\nresponses:\n- body:\n    \
                    string: '{\"choices\":[]}'\n  headers:\n    content-type:\n    - \
                    application/json\n  status:\n    code: 200\n    message: OK\n";
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(text.as_bytes()).unwrap();
        let gz = encoder.finish().unwrap();
        let exchanges = read(&gz, true, 1 << 20).unwrap();
        let foreign = exchanges[0].as_ref().unwrap();
        assert_eq!(exchanges.len(), 1);
        assert_eq!(foreign.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(foreign.body, br#"{"choices":[]}"#);
        assert_eq!(foreign.status, 200);
    }
}

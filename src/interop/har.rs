//! HTTP Archive (HAR) 1.2 files, read and written.
//!
//! Read: `log.entries[]`, each a `request` (`method`, `url`, `headers[{name, value}]`,
//! `postData.text`, base64 when `postData._encoding` or the 1.3 draft's `encoding` says so) and
//! a `response` (`status`, `headers`, `content.text`, base64 when `content.encoding` says so);
//! the entry's `_tooltap` key, when present, is handed on (see [`super::Extra`]).
//!
//! Write: one HAR per export, one entry per recording, the response body as all frames joined
//! (`content.text`, base64 when not UTF-8), timings from the frames' times, `_tooltap` beside
//! (HAR readers ignore keys starting with `_`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use super::{Extra, Foreign, ForeignBody, reason};
use crate::record::Recording;
use crate::redact::Redactor;

/// The entries of a HAR file, each an exchange or why it is not one; `Err` when the file is not
/// a HAR at all (not JSON, cut short, no `log.entries`).
pub fn read(bytes: &[u8]) -> Result<Vec<Result<Foreign, String>>, String> {
    let mut document: Value =
        serde_json::from_slice(bytes).map_err(|error| format!("not a HAR file: {error}"))?;
    // Taken apart as it is read: each body's text moves into its exchange.
    let entries = document
        .get_mut("log")
        .and_then(|log| log.get_mut("entries"))
        .map(Value::take);
    let Some(Value::Array(entries)) = entries else {
        return Err("not a HAR file: no `log.entries` list".into());
    };
    drop(document);
    Ok(entries.into_iter().map(entry).collect())
}

/// The string under `key`, moved out.
fn take_text(value: &mut Value, key: &str) -> Option<String> {
    match value.get_mut(key).map(Value::take) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    }
}

fn entry(mut entry: Value) -> Result<Foreign, String> {
    let mut request = entry
        .get_mut("request")
        .map(Value::take)
        .ok_or("no `request`")?;
    let mut response = entry
        .get_mut("response")
        .map(Value::take)
        .ok_or("no `response`")?;
    let method = take_text(&mut request, "method").ok_or("no `request.method`")?;
    let url = take_text(&mut request, "url").ok_or("no `request.url`")?;
    let status = response
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|status| u16::try_from(status).ok())
        .ok_or("no `response.status`")?;
    let request_body = match request.get_mut("postData") {
        Some(post) => {
            let base64 = [post.get("_encoding"), post.get("encoding")]
                .into_iter()
                .flatten()
                .any(|encoding| encoding.as_str() == Some("base64"));
            let text = take_text(post, "text").unwrap_or_default();
            Some(ForeignBody::Bytes(decode(
                text,
                base64,
                "request.postData",
            )?))
        }
        None => None,
    };
    let body = match response.get_mut("content") {
        Some(content) => {
            let base64 = content.get("encoding").and_then(Value::as_str) == Some("base64");
            match take_text(content, "text") {
                Some(text) => decode(text, base64, "response.content")?,
                None => Vec::new(),
            }
        }
        None => Vec::new(),
    };
    Ok(Foreign {
        method,
        url,
        request_headers: headers(&request),
        request_body,
        status,
        response_headers: headers(&response),
        body,
        started: take_text(&mut entry, "startedDateTime"),
        extra: entry.get_mut(super::Format::Har.key()).map(Value::take),
    })
}

/// A body's text as bytes (moved), or base64-decoded.
fn decode(text: String, base64: bool, what: &str) -> Result<Vec<u8>, String> {
    if !base64 {
        return Ok(text.into_bytes());
    }
    BASE64
        .decode(text.trim())
        .map_err(|error| format!("`{what}.text` is not base64: {error}"))
}

/// `headers[{name, value}]` as pairs.
fn headers(part: &Value) -> Vec<(String, String)> {
    part.get("headers")
        .and_then(Value::as_array)
        .map(|headers| {
            headers
                .iter()
                .filter_map(|header| {
                    let name = header.get("name")?.as_str()?;
                    let value = header.get("value")?.as_str()?;
                    Some((name.to_owned(), value.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A HAR document holding `recordings` in the given order, credentials dropped by `redactor`.
pub fn write(recordings: &[&Recording], redactor: &Redactor) -> Value {
    let entries: Vec<Value> = recordings
        .iter()
        .map(|recording| entry_of(recording, redactor))
        .collect();
    json!({
        "log": {
            "version": "1.2",
            "creator": {"name": "tooltap", "version": env!("CARGO_PKG_VERSION")},
            "pages": [],
            "entries": entries,
        }
    })
}

fn entry_of(recording: &Recording, redactor: &Redactor) -> Value {
    let meta = &recording.meta;
    let body = recording.body();
    let pairs = |headers: &[(String, String)]| -> Vec<Value> {
        headers
            .iter()
            .map(|(name, value)| json!({"name": name, "value": value}))
            .collect()
    };
    let request_headers = super::export::request_headers(meta, redactor);
    let response_headers = super::export::response_headers(meta, body.len(), redactor);
    let mime = |headers: &[(String, String)]| {
        headers
            .iter()
            .find(|(name, _)| name == "content-type")
            .map_or("", |(_, value)| value.as_str())
            .to_owned()
    };
    let query: Vec<Value> = meta
        .query
        .as_deref()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            json!({"name": name, "value": value})
        })
        .collect();
    let mut request = json!({
        "method": meta.method,
        "url": super::export::url(meta),
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": pairs(&request_headers),
        "queryString": query,
        "headersSize": -1,
        "bodySize": -1,
    });
    if let Some(bytes) = super::vcr::request_bytes(&meta.request.body, redactor) {
        request["bodySize"] = json!(bytes.len());
        request["postData"] = match String::from_utf8(bytes) {
            Ok(text) => json!({"mimeType": mime(&request_headers), "text": text}),
            Err(error) => json!({
                "mimeType": mime(&request_headers),
                "text": BASE64.encode(error.as_bytes()),
                "_encoding": "base64",
            }),
        };
    }
    let mut content = json!({"size": body.len(), "mimeType": mime(&response_headers)});
    match std::str::from_utf8(&body) {
        Ok(text) => content["text"] = json!(text),
        Err(_) => {
            content["text"] = json!(BASE64.encode(&body));
            content["encoding"] = json!("base64");
        }
    }
    let first = recording.frames.first().map_or(0, |frame| frame.t_us);
    let last = recording.frames.last().map_or(0, |frame| frame.t_us);
    let end = recording
        .end
        .as_ref()
        .map_or(last, |end| end.t_us.max(last));
    let ms = |us: u64| us as f64 / 1000.0;
    json!({
        "startedDateTime": meta.started,
        "time": ms(end),
        "request": request,
        "response": {
            "status": meta.response.status,
            "statusText": reason(meta.response.status),
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": pairs(&response_headers),
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": body.len(),
        },
        "cache": {},
        "timings": {
            "blocked": -1, "dns": -1, "connect": -1, "ssl": -1,
            "send": 0,
            "wait": ms(first),
            "receive": ms(end.saturating_sub(first)),
        },
        "_tooltap": serde_json::to_value(Extra::of(recording)).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_har_is_one_error_naming_why() {
        let whole = br#"{"log":{"version":"1.2","entries":[{"request":{"method":"POST",
            "url":"http://h/v1/chat/completions","headers":[],"postData":{"mimeType":"x",
            "text":"e30=","_encoding":"base64"}},"response":{"status":200,"headers":[
            {"name":"content-type","value":"application/json"}],"content":{"size":2,
            "mimeType":"application/json","text":"{}"}}}]}}"#;
        let entries = read(whole).unwrap();
        let foreign = entries[0].as_ref().unwrap();
        let Some(ForeignBody::Bytes(request)) = &foreign.request_body else {
            panic!("no body")
        };
        assert_eq!(request, b"{}");
        assert_eq!(foreign.body, b"{}");
        let error = read(&whole[..whole.len() - 20]).unwrap_err();
        assert!(error.starts_with("not a HAR file: EOF"), "{error}");
        let error = read(b"{\"log\":{}}").unwrap_err();
        assert!(error.contains("no `log.entries`"), "{error}");
    }
}

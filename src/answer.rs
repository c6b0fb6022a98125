//! tooltap's own JSON answers: the proxy's errors, replay's misses, enforce mode's refusals and
//! the admin listener's replies are all built here, so each has the same content type and the
//! errors the same shape.
//!
//! Input: a status and a JSON body (or the error shape's fields). Output: a complete
//! `Response<Bytes>`.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};

/// A complete JSON response in the OpenAI error shape,
/// `{"error":{"message","type","code"}}`, which the official SDKs print as one clear line.
pub fn error_response(
    status: StatusCode,
    kind: &str,
    code: &str,
    message: &str,
) -> Response<Bytes> {
    let body = serde_json::json!({
        "error": { "message": message, "type": kind, "code": code }
    });
    json_response(status, &body)
}

/// A complete JSON response with this status and body. Every error tooltap answers itself goes
/// through here (proxy and replay through [`error_response`]; enforce mode's 502, whose body
/// follows the dialect's error shape, directly).
pub fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

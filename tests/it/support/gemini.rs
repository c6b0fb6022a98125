//! Gemini traffic for the downstream tests (credentials, enforce, replay): a request declaring
//! one function, and the AI Studio path prefix it is posted under.

/// The AI Studio model path; `:generateContent` or `:streamGenerateContent` follows.
pub const MODEL: &str = "/v1beta/models/gemini-2.5-flash";

/// A `generateContent` request asking for the weather in `city`, `get_weather` declared.
pub fn request_body(city: &str) -> String {
    serde_json::json!({
        "contents": [{"role": "user", "parts": [{"text": format!("Weather in {city}?")}]}],
        "tools": [{"functionDeclarations": [{
            "name": "get_weather",
            "parametersJsonSchema": {"type": "object",
                "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }]}]
    })
    .to_string()
}

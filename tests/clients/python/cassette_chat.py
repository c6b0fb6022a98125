"""Send chat completions tagged with a test's cassette through the official openai SDK.

Usage: python cassette_chat.py BASE_URL REQUESTS

REQUESTS is a JSON array of `[cassette, message]` pairs, sent in order, one buffered chat
completion each (a new conversation with that user message); the cassette goes in the
`x-tooltap-cassette` header (as the pytest plugin sends it), `null` sends none. Prints one JSON array on stdout, one object per request:
`status`, `content` (the assistant's text) and `recording` (tooltap's `x-tooltap-recording`
header) on success; `status` and `error` (the message tooltap's error body carries) on an HTTP
error. The Rust tests in tests/it/replay/cassettes.rs read it.
"""
import json
import sys

import openai
from openai import OpenAI


def main() -> None:
    base_url, requests = sys.argv[1], json.loads(sys.argv[2])
    client = OpenAI(base_url=base_url, api_key="sk-test-cassette", max_retries=0, timeout=20)
    results = []
    for cassette, message in requests:
        headers = {} if cassette is None else {"x-tooltap-cassette": cassette}
        try:
            raw = client.chat.completions.with_raw_response.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": message}],
                extra_headers=headers,
            )
            completion = raw.parse()
            results.append({
                "status": raw.http_response.status_code,
                "content": completion.choices[0].message.content,
                "recording": raw.headers.get("x-tooltap-recording"),
            })
        except openai.APIStatusError as error:
            body = error.body if isinstance(error.body, dict) else {}
            results.append({"status": error.status_code, "error": body.get("message", str(error))})
    print(json.dumps(results))


if __name__ == "__main__":
    main()

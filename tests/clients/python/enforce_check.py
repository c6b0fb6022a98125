"""Drive tooltap's enforce mode with the official OpenAI Python SDK.

Usage: enforce_check.py BASE_URL FIXTURES_DIR

Sends three requests taken verbatim from the engine's fixture corpus (the scripted upstream picks
its answer by the x-fixture header) and prints one JSON object saying what the SDK did:
- "buffered": a response whose tool-call arguments are an object: the SDK must raise, with the
  rule id in its message;
- "clean": the seed's forced call: the SDK must return it normally;
- "stream": a stream whose parallel fragments all reuse index 0: iteration must raise mid-way.
"""

import json
import sys

import openai


def main() -> None:
    base_url, fixtures = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base_url, api_key="sk-test-enforce", max_retries=0)

    def call(name):
        with open(f"{fixtures}/{name}/request.json", encoding="utf-8") as f:
            request = json.load(f)
        return client.chat.completions.create(**request, extra_headers={"x-fixture": name})

    out = {}
    try:
        call("buffered_arguments_object")
        out["buffered"] = {"raised": False}
    except openai.APIStatusError as error:
        out["buffered"] = {
            "raised": True,
            "status": error.status_code,
            "message": str(error),
            "code": (error.body or {}).get("code") if isinstance(error.body, dict) else None,
        }

    clean = call("seed_forced_buffered")
    call0 = clean.choices[0].message.tool_calls[0]
    out["clean"] = {
        "finish_reason": clean.choices[0].finish_reason,
        "name": call0.function.name,
        "arguments_is_str": isinstance(call0.function.arguments, str),
    }

    chunks = 0
    try:
        for _chunk in call("stream_parallel_all_on_index_0"):
            chunks += 1
        out["stream"] = {"raised": False, "chunks": chunks}
    except openai.APIError as error:
        out["stream"] = {"raised": True, "chunks_before": chunks, "message": str(error)}

    print(json.dumps(out))


if __name__ == "__main__":
    main()

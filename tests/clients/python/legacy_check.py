"""Drive the legacy Chat Completions `functions=` surface with the official OpenAI Python SDK.

Usage: legacy_check.py BASE_URL FIXTURES_DIR

Sends requests taken verbatim from the engine's fixture corpus (the scripted upstream picks its
answer by the x-fixture header; every request carries `functions=`, some `function_call=`) and
prints one JSON object with what the SDK returned: the buffered `message.function_call`, the
streamed `delta.function_call` fragments accumulated as the SDK's users do, the finish reasons,
and the same for a broken buffered answer and a broken stream.
"""

import json
import sys

import openai


def main() -> None:
    base_url, fixtures = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base_url, api_key="sk-test-legacy", max_retries=0)

    def create(name):
        with open(f"{fixtures}/{name}/request.json", encoding="utf-8") as f:
            request = json.load(f)
        assert "functions" in request, name
        return client.chat.completions.create(**request, extra_headers={"x-fixture": name})

    def buffered(name):
        answer = create(name)
        choice = answer.choices[0]
        call = choice.message.function_call
        return {
            "finish_reason": choice.finish_reason,
            "function_call": call.model_dump(mode="json") if call is not None else None,
            "tool_calls": choice.message.tool_calls,
            "content": choice.message.content,
        }

    def streamed(name):
        fc_name, arguments, finish, chunks = "", "", [], 0
        for chunk in create(name):
            chunks += 1
            for choice in chunk.choices:
                call = choice.delta.function_call
                if call is not None:
                    fc_name += call.name or ""
                    arguments += call.arguments or ""
                if choice.finish_reason is not None:
                    finish.append(choice.finish_reason)
        return {"name": fc_name, "arguments": arguments, "finish_reasons": finish, "chunks": chunks}

    out = {
        "buffered": buffered("pair_legacy_call_json"),
        "forced": buffered("pass_legacy_forced_stop"),
        "stream": streamed("pair_legacy_call_sse"),
        "broken_buffered": buffered("legacy_buffered_arguments_not_string"),
        "broken_stream": streamed("legacy_stream_finish_reason_missing"),
    }
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()

"""What the official openai Python SDK hands an app for one exchange, quirk or not.

Usage: python quirk_probe.py BASE_URL MODE REQUEST_JSON

MODE is `create` (buffered), `create-stream` (stream=True, chunks accumulated the way the
OpenAI cookbook does it: by index, arguments concatenated) or `stream-helper`
(`client.chat.completions.stream(...)` and `get_final_completion()`). Prints one JSON object:
{"outcome":"raised","error":"Type: message"} or {"outcome":"returned","finish_reason":...,
"content":...,"calls":[{"id","name","arguments"}]} (arguments as the SDK gave them, any type).
scripts/quirk-matrix and tests/quirk_clients.rs read it.
"""
import json
import sys

from openai import OpenAI


def describe(value):
    return value if isinstance(value, (str, type(None))) else {"non_string": type(value).__name__, "value": value}


def create(client, request):
    completion = client.chat.completions.create(**request)
    message = completion.choices[0].message
    calls = [{"id": c.id, "name": c.function.name, "arguments": describe(c.function.arguments)}
             for c in message.tool_calls or []]
    return {"finish_reason": completion.choices[0].finish_reason, "content": message.content, "calls": calls}


def create_stream(client, request):
    calls, content, finish = {}, None, None
    for chunk in client.chat.completions.create(**request):
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content is not None:
                content = (content or "") + delta.content
            for fragment in delta.tool_calls or []:
                call = calls.setdefault(fragment.index, {"id": None, "name": None, "arguments": ""})
                if fragment.id:
                    call["id"] = fragment.id
                if fragment.function and fragment.function.name:
                    call["name"] = fragment.function.name
                if fragment.function and fragment.function.arguments is not None:
                    call["arguments"] += fragment.function.arguments
            if choice.finish_reason:
                finish = choice.finish_reason
    return {"finish_reason": finish, "content": content, "calls": list(calls.values())}


def stream_helper(client, request):
    request = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
    with client.chat.completions.stream(**request) as stream:
        for _event in stream:
            pass
        completion = stream.get_final_completion()
    message = completion.choices[0].message
    calls = [{"id": c.id, "name": c.function.name, "arguments": describe(c.function.arguments)}
             for c in message.tool_calls or []]
    return {"finish_reason": completion.choices[0].finish_reason, "content": message.content, "calls": calls}


def main() -> None:
    base_url, mode, request = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    client = OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=20)
    run = {"create": create, "create-stream": create_stream, "stream-helper": stream_helper}[mode]
    if mode == "create":
        request = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
    try:
        result = {"outcome": "returned", **run(client, request)}
    except Exception as error:  # the point: which error an app sees
        result = {"outcome": "raised", "error": f"{type(error).__name__}: {str(error)[:160]}"}
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()

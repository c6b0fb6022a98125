"""Drives the official `ollama` Python client (Ollama's native /api/chat, not its OpenAI shim)
against one base URL and prints what the client got as JSON: per case the tool calls (name,
arguments) the client surfaced, the text, `done` and `done_reason`, each streamed chunk's calls.
Run once direct against the upstream, once through tooltap and once against `tooltap replay`;
the test compares.

Cases, each with `chat(stream=False)` and `chat(stream=True)` (the client's default is not to
stream; Ollama's server default is to stream): one call, parallel calls, text only, and a
two-turn loop (the call, then its result sent back as `role: tool` with `tool_name`, then the
answer), which replays the first turn's calls with OBJECT arguments as the client keeps them.

Usage: ollama_check.py BASE_URL [faithful]. An error the client raises (`ResponseError`, on an
`{"error": ...}` body or NDJSON line) is printed in the case's place."""
import json, sys

import ollama

base_url, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "faithful")
client = ollama.Client(host=base_url)
MODEL = "qwen3"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "required": ["city"],
                   "properties": {"city": {"type": "string"}}}}}]


def calls(message):
    return [{"name": c.function.name, "arguments": dict(c.function.arguments)}
            for c in (message.tool_calls or [])]


def buffered(messages):
    r = client.chat(model=MODEL, messages=messages, tools=TOOLS, stream=False)
    return {"calls": calls(r.message), "text": r.message.content, "done": r.done,
            "done_reason": r.done_reason}, r.message


def streamed(messages):
    chunks, text, all_calls, last = [], "", [], None
    for part in client.chat(model=MODEL, messages=messages, tools=TOOLS, stream=True):
        got = calls(part.message)
        chunks.append({"calls": got, "done": part.done})
        text += part.message.content or ""
        all_calls += got
        last = part
    return {"calls": all_calls, "text": text, "chunks": chunks, "done": last.done,
            "done_reason": last.done_reason}, all_calls


def guarded(run, *args):
    try:
        return run(*args)
    except ollama.ResponseError as error:
        return {"error": f"ResponseError {error.status_code}: {error.error}"}, None


def user(text):
    return [{"role": "user", "content": text}]


def two_turn(prompt, stream):
    messages = user(prompt)
    if stream:
        first, got = guarded(streamed, messages)
        if got is None:
            return {"first": first}
        assistant = {"role": "assistant", "content": "",
                     "tool_calls": [{"function": c} for c in got]}
    else:
        first, message = guarded(buffered, messages)
        if message is None:
            return {"first": first}
        assistant = message
        got = calls(message)
    results = [{"role": "tool", "tool_name": c["name"],
                "content": json.dumps({"city": c["arguments"]["city"], "weather": "sunny"})}
               for c in got]
    second, _ = guarded(streamed if stream else buffered, messages + [assistant] + results)
    return {"first": first, "second": second}


CASES = {
    "one": "Ollama case one: weather in Lyon",
    "parallel": "Ollama case parallel: weather in Lyon and Nantes",
    "text": "Ollama case text: say hello",
}
out = {}
for name, prompt in CASES.items():
    out[name] = {"buffered": guarded(buffered, user(prompt))[0],
                 "stream": guarded(streamed, user(prompt))[0]}
out["loop"] = {"buffered": two_turn(CASES["one"], False), "stream": two_turn(CASES["parallel"], True)}
print(json.dumps(out, sort_keys=True))

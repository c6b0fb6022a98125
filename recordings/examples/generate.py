"""Writes the bundled example recordings (format v1, docs/recording-format.md).

The committed .jsonl files are the source of truth; this records how they were made:
`python3 recordings/examples/generate.py` rewrites them (with empty verdicts); then
`TOOLTAP_BLESS=1 cargo test --test check_cli examples` writes the engine's verdicts into their
end lines, as a live recording would have them. Bodies follow the OpenAI documented
shapes (chat.completion, chat.completion.chunk); headers and timings are made up but realistic.

  seed/         the seed suite's two requests (model gpt-4o-mini), answered cleanly
  failures/     real-world failure shapes, for other messages (they never match the seed suite)
  broken/       the seed's first request with arguments as an object, under the model name
                broken-args-as-object (run the seed suite with TARGET_MODEL=broken-args-as-object)
"""
import json, os

MODEL_OVERRIDE = {}
ROOT = os.path.dirname(os.path.abspath(__file__))
PARAMS = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
          "required": ["city"], "additionalProperties": False}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
                                            "parameters": PARAMS}}
FORCE = {"type": "function", "function": {"name": "get_weather"}}
REQ_HEADERS = [["content-type", "application/json"], ["authorization", "[REDACTED]"], ["user-agent", "OpenAI/JS 6.49.0"]]


def forced(content, model="gpt-4o-mini"):
    return {"model": model, "messages": [{"role": "user", "content": content}], "tools": [WEATHER],
            "tool_choice": FORCE, "max_tokens": 128}


def required_stream(content, model="gpt-4o-mini"):
    return {"model": model, "messages": [{"role": "user", "content": content}], "tools": [WEATHER],
            "tool_choice": "required", "stream": True, "max_tokens": 256}


def head(content_type, request_id):
    return [["content-type", content_type], ["openai-processing-ms", "412"], ["openai-version", "2020-10-01"],
            ["x-request-id", request_id], ["content-length" if content_type == "application/json" else "transfer-encoding",
                                           "0" if content_type == "application/json" else "chunked"]]


def compact(value):
    return json.dumps(value, separators=(",", ":"))


def write(name, exchange_id, request, status, headers, frames):
    """frames: [(t_us, text)]"""
    path = os.path.join(ROOT, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    body_bytes = sum(len(text.encode()) for _, text in frames)
    if any(h[0] == "content-length" for h in headers):
        headers = [h if h[0] != "content-length" else ["content-length", str(body_bytes)] for h in headers]
    meta = {"type": "exchange", "v": 1, "id": exchange_id, "started": "2026-12-02T12:00:00.000Z", "route": "default",
            "upstream": "https://api.openai.com", "method": "POST", "path": "/v1/chat/completions",
            "request": {"headers": REQ_HEADERS, "body": {"json": request}},
            "response": {"status": status, "headers": headers}, "redacted": ["header:authorization"]}
    lines = [compact(meta)]
    for seq, (t_us, text) in enumerate(frames):
        lines.append(compact({"type": "frame", "seq": seq, "t_us": t_us, "text": text}))
    end_t = (frames[-1][0] if frames else 0) + 150
    lines.append(compact({"type": "end", "outcome": "complete", "t_us": end_t, "dropped_frames": 0,
                          "frames": len(frames), "bytes": body_bytes, "completeness": {"state": "complete"},
                          "violations": []}))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def completion(cid, calls, finish="tool_calls", model="gpt-4o-mini"):
    return {"id": cid, "object": "chat.completion", "created": 1764676800, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": calls,
                                                  "refusal": None, "annotations": []},
                         "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": 63, "completion_tokens": 18, "total_tokens": 81},
            "service_tier": "default", "system_fingerprint": "fp_560af6e559"}


def chunk(cid, delta=None, finish=None, choices=True, usage=None, model="gpt-4o-mini"):
    model = MODEL_OVERRIDE.get("model", model)
    c = {"id": cid, "object": "chat.completion.chunk", "created": 1764676800, "model": model,
         "service_tier": "default", "system_fingerprint": "fp_560af6e559"}
    c["choices"] = [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}] if choices else []
    if usage is not None:
        c["usage"] = usage
    return "data: " + compact(c) + "\n\n"


def frag(index, args, call_id=None, name=None):
    f = {"index": index}
    if call_id:
        f["id"] = call_id
        f["type"] = "function"
    fn = {}
    if name:
        fn["name"] = name
    fn["arguments"] = args
    f["function"] = fn
    return {"tool_calls": [f]}


def paced(events, first=310_000, gap=23_000):
    return [(first + i * gap, e) for i, e in enumerate(events)]


def buffered(name, exchange_id, request, body):
    write(name, exchange_id, request, 200, head("application/json", "req_" + exchange_id),
          [(842_000, compact(body))])


def stream(name, exchange_id, request, events):
    write(name, exchange_id, request, 200, head("text/event-stream; charset=utf-8", "req_" + exchange_id),
          paced(events))


def call(call_id, args):
    return {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": args}}


# The seed's first request, answered cleanly.
buffered("seed/forced-buffered.jsonl", "tex1-1", forced("Weather in Paris, metric."),
         completion("chatcmpl-ex1", [call("call_Xq3pTn2Wb8", compact({"city": "Paris", "unit": "c"}))]))

# The seed's second request: two parallel calls whose fragments interleave, then a usage chunk.
# One SSE event is split across two frames, as networks do.
cid = "chatcmpl-ex2"


def seed_stream_events():
    events = [
        chunk(cid, {"role": "assistant", "content": None, "refusal": None}),
        chunk(cid, frag(0, "", "call_paris7Hk2", "get_weather")),
        chunk(cid, frag(0, "{\"ci")),
        chunk(cid, frag(1, "", "call_oslo4Rt9", "get_weather")),
        chunk(cid, frag(1, "{\"city\"")),
        chunk(cid, frag(0, "ty\": \"Par")),
        chunk(cid, frag(1, ": \"Oslo\", ")),
        chunk(cid, frag(0, "is\", \"unit\": \"c\"}")),
        chunk(cid, frag(1, "\"unit\": \"c\"}")),
        chunk(cid, {}, "tool_calls"),
        chunk(cid, choices=False, usage={"prompt_tokens": 66, "completion_tokens": 52, "total_tokens": 118}),
        "data: [DONE]\n\n",
    ]
    split = events[6]
    events[6:7] = [split[:40], split[40:]]
    return events


stream("seed/required-stream.jsonl", "tex1-2", required_stream("Weather in Paris and in Oslo."), seed_stream_events())

# A "helpful" server that parses the arguments into an object.
buffered("failures/arguments-object.jsonl", "tex1-3", forced("Weather in Lisbon."),
         completion("chatcmpl-ex3", [{"id": "call_lis1", "type": "function",
                                      "function": {"name": "get_weather", "arguments": {"city": "Lisbon"}}}]))

# Tool calls streamed, but the stream ends with finish_reason "stop".
cid = "chatcmpl-ex4"
stream("failures/finish-stop-with-calls.jsonl", "tex1-4", required_stream("Weather in Rome."), [
    chunk(cid, {"role": "assistant", "content": None}),
    chunk(cid, frag(0, "", "call_rome1", "get_weather")),
    chunk(cid, frag(0, "{\"city\": \"Rome\"}")),
    chunk(cid, {}, "stop"),
    "data: [DONE]\n\n",
])

# Two parallel calls, but every fragment says index 0: an index-keyed accumulator merges them.
cid = "chatcmpl-ex5"
stream("failures/parallel-all-index-0.jsonl", "tex1-5", required_stream("Weather in Berlin and in Madrid."), [
    chunk(cid, {"role": "assistant", "content": None}),
    chunk(cid, frag(0, "", "call_ber1", "get_weather")),
    chunk(cid, frag(0, "{\"city\": \"Berlin\"}")),
    chunk(cid, frag(0, "", "call_mad2", "get_weather")),
    chunk(cid, frag(0, "{\"city\": \"Madrid\"}")),
    chunk(cid, {}, "tool_calls"),
    "data: [DONE]\n\n",
])

# The seed's first request answered with arguments as an object, under its own model name so it
# never answers the clean run (TARGET_MODEL=gpt-4o-mini).
BROKEN = "broken-args-as-object"
buffered("broken/seed-forced-arguments-object.jsonl", "tex1-6", forced("Weather in Paris, metric.", BROKEN),
         completion("chatcmpl-ex6", [{"id": "call_Xq3pTn2Wb8", "type": "function",
                                      "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}],
                    model=BROKEN))

# The same provider streams correctly: with TARGET_MODEL=broken-args-as-object only the seed's
# first test fails.
cid = "chatcmpl-ex7"
MODEL_OVERRIDE["model"] = BROKEN
stream("broken/seed-required-stream.jsonl", "tex1-7", required_stream("Weather in Paris and in Oslo.", BROKEN),
       seed_stream_events())
MODEL_OVERRIDE.clear()

"""Drives the official anthropic SDK's Messages API (messages.create buffered and stream=True,
and the messages.stream() helper with get_final_message()) against one base URL, and prints
what the client got as JSON: block types, names, inputs, stop reasons, event types. Run once
direct against the upstream and once through tooltap; the test compares. Tool-use ids are
random per answer, so only their form is printed.

Usage: anthropic_check.py BASE_URL [clean|broken]. `broken` asks for a tool the request does not
declare (aimock answers with it anyway) and prints, per call, either the answer or the error the
SDK raised (enforce mode turns the violation into one)."""
import json, sys

import anthropic

base_url, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "clean")
client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-test", max_retries=0)
TOOLS = [{"name": "get_weather", "description": "Current weather",
          "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                           "required": ["location"]}}]
MODEL = "claude-tooltap-test"

def blocks(content):
    return [{"type": b.type, "name": getattr(b, "name", None), "input": getattr(b, "input", None),
             "text": getattr(b, "text", None),
             "id_ok": getattr(b, "id", "toolu_").startswith("toolu_")} for b in content]

def ask(text):
    return [{"role": "user", "content": text}]

def buffered(text):
    m = client.messages.create(model=MODEL, max_tokens=256, tools=TOOLS, messages=ask(text))
    return {"stop_reason": m.stop_reason, "blocks": blocks(m.content)}

def streamed(text):
    events, deltas = [], []
    for event in client.messages.create(model=MODEL, max_tokens=256, tools=TOOLS, messages=ask(text), stream=True):
        events.append(event.type)
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            deltas.append(event.delta.partial_json)
    return {"events": events, "input_json": "".join(deltas)}

def helper(text):
    with client.messages.stream(model=MODEL, max_tokens=256, tools=TOOLS, messages=ask(text)) as stream:
        message = stream.get_final_message()
    return {"stop_reason": message.stop_reason, "blocks": blocks(message.content)}

def guarded(call, text):
    try:
        return call(text)
    except anthropic.APIError as error:
        return {"error": type(error).__name__, "message": str(error)}

out = {}
if mode == "clean":
    out["buffered"] = buffered("What is the weather in Paris and Oslo?")
    out["stream"] = streamed("What is the weather in Paris?")
    out["helper"] = helper("What is the weather in Paris and Oslo?")
    # The second turn: the tool result goes back, the answer is text.
    first = client.messages.create(model=MODEL, max_tokens=256, tools=TOOLS, messages=ask("What is the weather in Paris?"))
    call = next(b for b in first.content if b.type == "tool_use")
    second = client.messages.create(model=MODEL, max_tokens=256, tools=TOOLS, messages=[
        *ask("What is the weather in Paris?"),
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny, 21 degrees"}]},
    ])
    out["second_turn"] = {"stop_reason": second.stop_reason, "blocks": blocks(second.content)}
else:
    text = "What is the local time in Tokyo?"
    out = {"buffered": guarded(buffered, text), "stream": guarded(streamed, text), "helper": guarded(helper, text)}
print(json.dumps(out))

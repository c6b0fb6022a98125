"""vcrpy and a HAR reader as judges of tooltap's interop (issue 36). Prints JSON.

Usage:
  vcr_cassettes.py record BASE_URL CASSETTE_DIR
      vcrpy (record_mode "all") records the openai SDK (chat buffered, streamed, and a call
      answered with a tool the request never declared) into CASSETTE_DIR/openai.yaml and the
      anthropic SDK (the same three) into CASSETTE_DIR/anthropic.yaml; prints the tool calls
      each SDK parsed.
  vcr_cassettes.py direct BASE_URL
      the same six calls without vcrpy (against `tooltap replay` of cassettes, say).
  vcr_cassettes.py replay CASSETTE_FILE
      vcrpy (record_mode "none", matching method and path) serves the same six calls from one
      cassette (tooltap's export); prints the tool calls the SDKs parsed, as `record` does.
  vcr_cassettes.py resave CASSETTE_FILE OUT_FILE
      vcrpy's own persister loads the cassette (its YAML loader, its request and response
      model) and saves it again to OUT_FILE; prints, per interaction, the `x_tooltap` id vcrpy
      kept and the response body it loaded, base64.
  vcr_cassettes.py har HAR_FILE
      haralyzer reads the HAR; prints per entry method, path, status, MIME type and the tool
      names found in the response text (SSE events or a JSON body)."""
import json, sys
from urllib.parse import urlparse

TOOL = {"name": "get_weather", "description": "Current weather",
        "schema": {"type": "object", "properties": {"location": {"type": "string"}},
                   "required": ["location"]}}
OPENAI_TOOLS = [{"type": "function", "function": {"name": TOOL["name"],
                 "description": TOOL["description"], "parameters": TOOL["schema"]}}]
ANTHROPIC_TOOLS = [{"name": TOOL["name"], "description": TOOL["description"],
                    "input_schema": TOOL["schema"]}]
ASKS = {"buffered": "What is the weather in Paris and Oslo?",
        "stream": "What is the weather in Paris?",
        "broken": "What is the local time in Tokyo?"}


def openai_calls(base_url):
    import openai
    client = openai.OpenAI(base_url=base_url + "/v1", api_key="sk-test-vcr", max_retries=0)
    out = {}
    for kind in ("buffered", "broken"):
        r = client.chat.completions.create(model="gpt-tooltap-test", tools=OPENAI_TOOLS,
                                           messages=[{"role": "user", "content": ASKS[kind]}])
        out["chat_" + kind] = [[c.function.name, json.loads(c.function.arguments)]
                               for c in r.choices[0].message.tool_calls or []]
    calls = {}
    stream = client.chat.completions.create(model="gpt-tooltap-test", tools=OPENAI_TOOLS, stream=True,
                                            messages=[{"role": "user", "content": ASKS["stream"]}])
    for chunk in stream:
        for d in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(d.index, {"name": "", "arguments": ""})
            if d.function and d.function.name:
                call["name"] += d.function.name
            if d.function and d.function.arguments:
                call["arguments"] += d.function.arguments
    out["chat_stream"] = [[c["name"], json.loads(c["arguments"])] for _, c in sorted(calls.items())]
    return out


def anthropic_calls(base_url):
    import anthropic
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-test-vcr", max_retries=0)
    out = {}
    for kind in ("buffered", "broken"):
        m = client.messages.create(model="claude-tooltap-test", max_tokens=256, tools=ANTHROPIC_TOOLS,
                                   messages=[{"role": "user", "content": ASKS[kind]}])
        out["anthropic_" + kind] = [[b.name, b.input] for b in m.content if b.type == "tool_use"]
    names, inputs = [], []
    for event in client.messages.create(model="claude-tooltap-test", max_tokens=256, tools=ANTHROPIC_TOOLS,
                                        stream=True, messages=[{"role": "user", "content": ASKS["stream"]}]):
        if event.type == "content_block_start" and event.content_block.type == "tool_use":
            names.append(event.content_block.name)
            inputs.append("")
        elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            inputs[-1] += event.delta.partial_json
    out["anthropic_stream"] = [[n, json.loads(i or "{}")] for n, i in zip(names, inputs)]
    return out


def sse_names(text):
    names = []
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        event = json.loads(line[5:])
        for choice in event.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                name = (call.get("function") or {}).get("name")
                if name:
                    names.append(name)
        block = event.get("content_block") or {}
        if block.get("type") == "tool_use":
            names.append(block["name"])
    return names


def json_names(text):
    body = json.loads(text)
    names = [c["function"]["name"] for choice in body.get("choices") or []
             for c in (choice.get("message") or {}).get("tool_calls") or []]
    return names + [b["name"] for b in body.get("content") or [] if b.get("type") == "tool_use"]


def main():
    mode = sys.argv[1]
    if mode == "record":
        import vcr
        base_url, folder = sys.argv[2], sys.argv[3]
        recorder = vcr.VCR(record_mode="all", cassette_library_dir=folder,
                           filter_headers=["authorization", "x-api-key"])
        with recorder.use_cassette("openai.yaml"):
            out = openai_calls(base_url)
        with recorder.use_cassette("anthropic.yaml"):
            out.update(anthropic_calls(base_url))
    elif mode == "direct":
        out = openai_calls(sys.argv[2])
        out.update(anthropic_calls(sys.argv[2]))
    elif mode == "replay":
        import vcr
        player = vcr.VCR(record_mode="none", match_on=["method", "path"])
        with player.use_cassette(sys.argv[2]) as cassette:
            # Nothing reaches the network: vcrpy answers from the cassette or raises.
            out = openai_calls("http://127.0.0.1:9")
            out.update(anthropic_calls("http://127.0.0.1:9"))
            out["played"] = cassette.play_count
            out["all_played"] = cassette.all_played
    elif mode == "resave":
        import base64
        from vcr.persisters.filesystem import FilesystemPersister
        from vcr.serializers import yamlserializer
        requests, responses = FilesystemPersister.load_cassette(sys.argv[2], yamlserializer)[:2]
        # vcrpy hands a loaded body over as bytes (compat.convert_to_bytes).
        out = {"interactions": [{"id": (r.get("x_tooltap") or {}).get("id"),
                                 "body": base64.b64encode(r["body"]["string"]).decode()}
                                for r in responses]}
        FilesystemPersister.save_cassette(sys.argv[3], {"requests": requests, "responses": responses},
                                          yamlserializer)
    elif mode == "har":
        from haralyzer import HarParser
        with open(sys.argv[2], encoding="utf-8") as f:
            parser = HarParser(json.load(f))
        out = {"entries": []}
        for page in parser.pages:
            for entry in page.entries:
                text = entry.response.text or ""
                mime = entry.response.mimeType or ""
                names = sse_names(text) if "event-stream" in mime else json_names(text)
                out["entries"].append([entry.request.method, urlparse(entry.request.url).path,
                                       entry.response.status, mime.split(";")[0], names])
    else:
        raise SystemExit("usage: vcr_cassettes.py record|replay|har ...")
    print(json.dumps(out, sort_keys=True))


main()

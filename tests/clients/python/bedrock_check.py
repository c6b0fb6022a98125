"""Drives boto3's `bedrock-runtime` client (Bedrock Converse) against one base URL through
`endpoint_url` and prints what the SDK gave its caller as JSON: per call the toolUse blocks
(name, input object, toolUseId), the text, the stopReason and the usage, or the error it raised
(type and message). Run once direct against the upstream, once through tooltap and once against
`tooltap replay`; the test compares.

Two clients, both region us-east-1: one signs with SigV4 from dummy in-code credentials (with a
session token, so `X-Amz-Security-Token` is sent too), one sends a Bedrock API key
(`AWS_BEARER_TOKEN_BEDROCK`, `Authorization: Bearer`). The model id is an inference-profile
ARN, which botocore percent-encodes into one path segment.

Usage: bedrock_check.py BASE_URL [faithful|unfaithful|quirked].
`faithful`: `converse` and `converse_stream` for one call and for parallel calls; text only and
text followed by a toolUse (`converse`); a two-turn loop that sends the toolResults back (both
turns `converse`; and with the first turn `converse_stream`); the Bearer client for one call,
both operations.
`unfaithful`: the answers of aimock's that break the contract: text streamed, alone and before
a toolUse (aimock opens a text block with an empty `contentBlockStart.start`, which boto3
rejects), and a tool call that ends with `stopReason: end_turn`, both operations.
`quirked`: the parallel calls, both operations, against `tooltap replay --quirk` of the
faithful run's recordings."""
import json, os, sys

# No profile, no instance metadata: the credentials are the ones below.
os.environ.update({"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                   "AWS_EC2_METADATA_DISABLED": "true"})
for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
             "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
    os.environ.pop(name, None)

import boto3  # noqa: E402 (after the environment is pinned)
from botocore.config import Config  # noqa: E402

base_url, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "faithful")
CONFIG = Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5,
                read_timeout=20)
MODEL = ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
         "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
# botocore prefers a Bearer token from the environment unless the client pins SigV4; each client
# has a session of its own (a session caches its token provider).
os.environ["AWS_BEARER_TOKEN_BEDROCK"] = "bedrock-test-api-key"
sigv4 = boto3.Session().client(
    "bedrock-runtime", region_name="us-east-1", endpoint_url=base_url,
    aws_access_key_id="AKIDBEDROCKTEST0001", aws_secret_access_key="bedrock-test-secret-key",
    aws_session_token="bedrock-test-session-token",
    config=CONFIG.merge(Config(signature_version="v4")))
bearer = boto3.Session().client("bedrock-runtime", region_name="us-east-1",
                                endpoint_url=base_url, config=CONFIG)

TOOL_CONFIG = {"tools": [{"toolSpec": {
    "name": "get_weather", "description": "Current weather for a city",
    "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}},
                             "required": ["city"], "additionalProperties": False}}}}],
    "toolChoice": {"auto": {}}}
WEATHER = {"Lyon": "sunny", "Nantes": "rainy", "Brest": "windy"}


def ask(text):
    return {"role": "user", "content": [{"text": text}]}


def message_seen(message, stop_reason, usage):
    """What one Converse answer gave the caller."""
    content = message.get("content", [])
    return {
        "calls": [{"name": b["toolUse"]["name"], "input": b["toolUse"]["input"],
                   "id": b["toolUse"]["toolUseId"]} for b in content if "toolUse" in b],
        "text": "".join(b["text"] for b in content if "text" in b),
        "stopReason": stop_reason,
        "usage": usage,
    }


def buffered(messages, client=sigv4):
    response = client.converse(modelId=MODEL, messages=messages, toolConfig=TOOL_CONFIG)
    seen = message_seen(response["output"]["message"], response["stopReason"],
                        response["usage"])
    return seen, response["output"]["message"]


def streamed(messages, client=sigv4):
    """Folds the events by contentBlockIndex, as a client must: a toolUse block opens with its
    contentBlockStart, a text block with its first delta."""
    response = client.converse_stream(modelId=MODEL, messages=messages, toolConfig=TOOL_CONFIG)
    events, blocks, stop_reason, usage = [], {}, None, None
    for event in response["stream"]:
        (kind, body), = event.items()
        events.append(kind)
        index = body.get("contentBlockIndex")
        if kind == "contentBlockStart" and "toolUse" in body["start"]:
            start = body["start"]["toolUse"]
            blocks[index] = {"toolUse": {"toolUseId": start["toolUseId"], "name": start["name"],
                                         "input": ""}}
        elif kind == "contentBlockDelta":
            delta = body["delta"]
            if "toolUse" in delta:
                blocks[index]["toolUse"]["input"] += delta["toolUse"]["input"]
            elif "text" in delta:
                blocks.setdefault(index, {"text": ""})["text"] += delta["text"]
        elif kind == "messageStop":
            stop_reason = body["stopReason"]
        elif kind == "metadata":
            usage = body["usage"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    message = {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}
    seen = message_seen(message, stop_reason, usage)
    seen["events"] = events
    return seen, message


def call(operation, text, client=sigv4):
    """One turn; what the SDK gave, or the error it raised."""
    try:
        return operation([ask(text)], client)[0]
    except Exception as error:  # whatever the SDK raises: its type and message are the output
        return {"error": type(error).__name__, "message": str(error)}


def two_turns(text, first_turn):
    """The loop: the model's message goes back with one toolResult (json) per toolUse."""
    history = [ask(text)]
    first, message = first_turn(history)
    results = [{"toolResult": {"toolUseId": c["id"], "status": "success", "content": [
        {"json": {"city": c["input"]["city"], "weather": WEATHER[c["input"]["city"]]}}]}}
        for c in first["calls"]]
    history += [message, {"role": "user", "content": results}]
    second, _ = buffered(history)
    return {"first": first, "second": second}


out = {}
if mode == "faithful":
    one = "Bedrock case one: weather in Lyon"
    parallel = "Bedrock case parallel: weather in Lyon and Nantes"
    for name, text in {"one": one, "parallel": parallel}.items():
        out[name] = {"buffered": call(buffered, text), "stream": call(streamed, text)}
    out["text"] = {"buffered": call(buffered, "Bedrock case text: say hello")}
    out["mixed"] = {"buffered": call(buffered, "Bedrock case mixed: check Nantes")}
    out["loop"] = two_turns(parallel, buffered)
    out["loop_stream"] = two_turns(one, streamed)
    out["bearer"] = {"buffered": call(buffered, one, bearer),
                     "stream": call(streamed, one, bearer)}
elif mode == "quirked":
    parallel = "Bedrock case parallel: weather in Lyon and Nantes"
    out["parallel"] = {"buffered": call(buffered, parallel), "stream": call(streamed, parallel)}
else:
    end_turn = "Bedrock case end turn: weather in Brest"
    out["text"] = {"stream": call(streamed, "Bedrock case text: say hello")}
    out["mixed"] = {"stream": call(streamed, "Bedrock case mixed: check Nantes")}
    out["end_turn"] = {"buffered": call(buffered, end_turn), "stream": call(streamed, end_turn)}
print(json.dumps(out))

"""Drives the official openai SDK's Responses API (create stream=False, create stream=True, the
responses.stream() helper) and the OpenAI Agents SDK (a two-turn tool-using agent) against one
base URL, and prints what the client got as JSON: item types, names, arguments, text, event
types. Run once direct against the upstream and once through tooltap; the test compares.
Only loopback is contacted: the Agents SDK's tracing export is turned off."""
import asyncio, json, os, sys

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
from openai import AsyncOpenAI, OpenAI  # noqa: E402

base_url = sys.argv[1]
client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
TOOLS = [{"type": "function", "name": "get_weather", "description": "Current weather",
          "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                         "required": ["location"], "additionalProperties": False},
          "strict": True}]

def items(output):
    return [{"type": i.type, "name": getattr(i, "name", None),
             "arguments": getattr(i, "arguments", None),
             "call_id_is_str": isinstance(getattr(i, "call_id", None), str)} for i in output]

out = {}
r = client.responses.create(model="gpt-5.4", input="What is the weather in Paris and Oslo?", tools=TOOLS, stream=False)
out["buffered"] = {"status": r.status, "items": items(r.output)}

events = []
final = None
for event in client.responses.create(model="gpt-5.4", input="What is the weather in Paris?", tools=TOOLS, stream=True):
    events.append(event.type)
    if event.type == "response.completed":
        final = event.response
out["stream"] = {"events": events, "items": items(final.output) if final else None}

with client.responses.stream(model="gpt-5.4", input="What is the weather in Paris and Oslo?", tools=TOOLS) as stream:
    done_args = [e.arguments for e in stream if e.type == "response.function_call_arguments.done"]
    response = stream.get_final_response()
out["helper"] = {"done_arguments": done_args, "status": response.status, "items": items(response.output)}

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled  # noqa: E402
set_tracing_disabled(True)
calls = []

@function_tool
def get_weather(location: str) -> str:
    """Current weather for a location."""
    calls.append(location)
    return f"sunny in {location}, 21 degrees"

async def agent_run():
    model = OpenAIResponsesModel(model="gpt-5.4", openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0))
    agent = Agent(name="weather", instructions="Answer with the weather tool.", tools=[get_weather], model=model)
    result = await Runner.run(agent, "What is the weather in Paris?")
    return result.final_output

out["agent"] = {"final_output": asyncio.run(agent_run()), "tool_calls": calls}
print(json.dumps(out))

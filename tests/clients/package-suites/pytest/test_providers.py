"""Chat Completions, the Responses API and Anthropic Messages, buffered and streamed, a
two-turn tool loop, and the Gemini API and Ollama (each SDK finds tooltap through the variable
the plugin sets): recorded once through tooltap, then replayed offline."""

import json

import anthropic
import openai
import pytest
from conftest import TOOLS

MODEL = "gpt-4o-mini"


def chat_call(stream: bool, prompt: str):
    client = openai.OpenAI()
    messages = [{"role": "user", "content": prompt}]
    if not stream:
        answer = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        call = answer.choices[0].message.tool_calls[0]
        return call.function.name, json.loads(call.function.arguments)
    name, arguments = None, ""
    for chunk in client.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, stream=True
    ):
        for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            name = delta.function.name or name
            arguments += delta.function.arguments or ""
    return name, json.loads(arguments)


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_chat(stream):
    assert chat_call(stream, "Suite chat: weather in Nantes") == ("get_weather", {"city": "Nantes"})


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_responses(stream):
    client = openai.OpenAI()
    tools = [{"type": "function", **TOOLS[0]["function"]}]
    prompt = "Suite responses: weather in Oslo"
    if stream:
        with client.responses.stream(model=MODEL, input=prompt, tools=tools) as events:
            response = events.get_final_response()
    else:
        response = client.responses.create(model=MODEL, input=prompt, tools=tools)
    calls = [item for item in response.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]


@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "streamed"])
def test_anthropic(stream):
    client = anthropic.Anthropic()
    tools = [
        {
            "name": "get_weather",
            "description": "Current weather in a city",
            "input_schema": TOOLS[0]["function"]["parameters"],
        }
    ]
    request = dict(
        model="claude-sonnet-4-5",
        max_tokens=256,
        tools=tools,
        messages=[{"role": "user", "content": "Suite anthropic: weather in Rome"}],
    )
    if stream:
        with client.messages.stream(**request) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**request)
    uses = [block for block in message.content if block.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == [("get_weather", {"city": "Rome"})]


def test_tool_loop():
    client = openai.OpenAI()
    messages = [{"role": "user", "content": "Suite loop: weather in Lyon"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"city": "Lyon"}
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 24 degrees"})
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert second.choices[0].message.content == "Lyon: sunny, 24 degrees."


def test_gemini():
    from google import genai
    from google.genai import types

    client = genai.Client(http_options=types.HttpOptions(api_version="v1beta"))
    declaration = types.FunctionDeclaration(
        name="get_weather",
        description="Current weather in a city",
        parameters_json_schema=TOOLS[0]["function"]["parameters"],
    )
    response = client.models.generate_content(
        model="gemini-2.5-flash",
        contents="Suite gemini: weather in Turin",
        config=types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])]),
    )
    calls = [(c.name, c.args) for c in response.function_calls or []]
    assert calls == [("get_weather", {"city": "Turin"})]


def test_ollama():
    import ollama

    answer = ollama.Client().chat(
        model="llama3.2",
        messages=[{"role": "user", "content": "Suite ollama: weather in Bern"}],
        tools=TOOLS,
    )
    calls = [(c.function.name, dict(c.function.arguments)) for c in answer.message.tool_calls]
    assert calls == [("get_weather", {"city": "Bern"})]

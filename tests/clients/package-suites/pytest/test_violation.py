"""aimock answers with arguments the tool's schema forbids: the test must fail, naming the
rule (tool_call.arguments_schema), whether recording or replaying."""

import json

import openai
from conftest import TOOLS


def test_violation():
    client = openai.OpenAI()
    answer = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Suite violation: weather in Brest"}],
        tools=TOOLS,
    )
    call = answer.choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"town": "Brest"}

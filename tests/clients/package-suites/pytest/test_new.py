"""Never recorded: in mode none its request misses, and the failure names the closest recording
(test_providers.py::test_chat's) and the pointer that differs."""

import openai
from conftest import TOOLS


def test_new_city():
    openai.OpenAI().chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Suite chat: weather in Nancy"}],
        tools=TOOLS,
    )

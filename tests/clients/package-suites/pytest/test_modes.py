"""The modes' test (tests/it/packages/pytest.rs runs it in once, new_episodes, all, rewrite and
none): its first request is always sent, its second only with SUITE_SECOND_TURN=1, so that
new_episodes meets a new request in a test already recorded."""

import os

import openai
from conftest import TOOLS


def ask(prompt: str) -> str:
    answer = openai.OpenAI().chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": prompt}],
        tools=TOOLS,
    )
    return answer.choices[0].message.tool_calls[0].function.name


def test_episode():
    assert ask("Suite chat: weather in Nantes") == "get_weather"
    if os.environ.get("SUITE_SECOND_TURN") == "1":
        assert ask("Suite loop: weather in Lyon") == "get_weather"

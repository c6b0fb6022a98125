"""A two-turn pydantic-ai agent loop (a tool call, then the answer) through tooltap.

Usage: python pydantic_ai_loop.py BASE_URL CASSETTE

pydantic-ai's OpenAIChatModel over the official openai SDK, every request tagged with
`x-tooltap-cassette: CASSETTE`. The agent asks for the weather in Paris; its `weather` tool
answers "sunny". When the upstream sends no tool-call id (an empty one, as the Rust test's
upstream does),
pydantic-ai invents one (`pyd_ai_<uuid>`) and sends it back in the second turn: a different id
on every run. Prints one JSON object on stdout: `output` (the agent's final text) and
`tool_call_ids` (the ids the second turn carried), or `status` and `error` when a model request
failed with an HTTP error (e.g. tooltap's 404 `replay_no_match`). The Rust test
tests/it/replay/pydantic_ai.rs reads it.
"""
import json
import sys

from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def main() -> None:
    base_url, cassette = sys.argv[1], sys.argv[2]
    client = AsyncOpenAI(base_url=base_url, api_key="sk-test-pydantic-ai", max_retries=0,
                         timeout=20, default_headers={"x-tooltap-cassette": cassette})
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    agent = Agent(model)

    @agent.tool_plain
    def weather(city: str) -> str:
        """The current weather in a city."""
        return f"sunny in {city}"

    try:
        result = agent.run_sync("Weather in Paris?")
    except ModelHTTPError as error:
        body = error.body if isinstance(error.body, dict) else {}
        message = body.get("message") or body.get("error", {}).get("message") or str(error)
        print(json.dumps({"status": error.status_code, "error": message}))
        return
    ids = [part.tool_call_id for message in result.all_messages() for part in message.parts
           if isinstance(part, ToolCallPart)]
    print(json.dumps({"output": result.output, "tool_call_ids": ids}))


if __name__ == "__main__":
    main()

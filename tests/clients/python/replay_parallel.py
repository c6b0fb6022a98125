"""Reassemble the seed's streamed parallel tool calls with the official openai SDK's own helper.

Usage: python replay_parallel.py BASE_URL MODEL

Sends the seed suite's second request (tool_choice "required", stream, max_tokens 256) through
`client.chat.completions.stream(...)`, lets the SDK's accumulator rebuild the message
(`get_final_completion()`), and prints one JSON object on stdout: the finish reason, each tool
call's id, name and arguments string in SDK order, and the usage total. The Rust test
tests/replay/clients.rs compares it with tooltap's own reassembly of the same recording.
"""
import json
import sys

from openai import OpenAI

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city"],
    "additionalProperties": False,
}
TOOLS = [{"type": "function",
          "function": {"name": "get_weather", "description": "Current weather for a city", "parameters": PARAMETERS}}]


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=20)
    with client.chat.completions.stream(
        model=model,
        messages=[{"role": "user", "content": "Weather in Paris and in Oslo."}],
        tools=TOOLS,
        tool_choice="required",
        max_tokens=256,
    ) as stream:
        for _event in stream:
            pass
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    calls = [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
             for call in choice.message.tool_calls or []]
    usage = completion.usage.total_tokens if completion.usage else None
    print(json.dumps({"finish_reason": choice.finish_reason, "tool_calls": calls, "usage": usage}))


if __name__ == "__main__":
    main()

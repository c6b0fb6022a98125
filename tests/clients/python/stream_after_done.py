"""Stream chat completions through tooltap with the official OpenAI Python SDK, N times.

Usage: stream_after_done.py BASE_URL N

The SDK stops reading at `data: [DONE]` and closes the response right then, before the
upstream's final chunk terminator: tooltap must still judge each stream as complete. Prints one
JSON object: how many streams were iterated to their end and how many chunks each gave.
"""

import json
import sys

import openai


def main() -> None:
    base_url, count = sys.argv[1], int(sys.argv[2])
    client = openai.OpenAI(base_url=base_url, api_key="sk-test-after-done", max_retries=0)
    chunks = []
    for _ in range(count):
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        chunks.append(sum(1 for _ in stream))
    print(json.dumps({"streams": len(chunks), "chunks": sorted(set(chunks))}))


if __name__ == "__main__":
    main()

"""Drives the Python `mcp` 2.x `Client` against an MCP URL and prints what it got, as JSON.

Usage: python mcp_replay_client.py URL [legacy|auto] [BEARER_TOKEN]

Lists the tools and calls each of `mcp_replay_server.py`'s tools once, then an unknown tool;
prints {"tools": [...], "calls": [...]} with the tool list and every result as the SDK
returns them (model dumps), or what it raised on a call ({"raised": "Type: message"}), so two
runs (direct, and through tooltap replay) compare equal.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main() -> None:
    url = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "legacy"
    token = sys.argv[3] if len(sys.argv) > 3 else None
    server = url
    if token:
        # Client(url) takes no headers: a transport with its own HTTP client carries the token.
        headers = {"Authorization": f"Bearer {token}"}
        server = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    out = {"tools": [], "calls": []}
    async with Client(server, mode=mode, read_timeout_seconds=20) as client:
        listed = await client.list_tools()
        out["tools"] = [
            tool.model_dump(mode="json", exclude_none=True) for tool in listed.tools
        ]
        for name, arguments in [
            ("get_weather", {"location": "Paris"}),
            ("shout", {"message": "hello"}),
            ("get_weather", {"location": "Oslo"}),
            ("no_such_tool", {}),
        ]:
            try:
                result = await client.call_tool(name, arguments)
            except Exception as error:  # what the SDK raises on a broken answer
                out["calls"].append({"name": name, "raised": f"{type(error).__name__}: {error}"})
                continue
            dumped = result.model_dump(mode="json", exclude_none=True)
            dumped.pop("_meta", None)
            dumped.pop("meta", None)
            out["calls"].append({"name": name, "result": dumped})
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main())

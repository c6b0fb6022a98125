"""Lists and calls the tools of an MCP server (tests/clients/python/mcp_servers/weather.py, or
anything serving its tools) with one real client, and prints what the client got as JSON:
the tool list and each call's result, as the client's own models dump them.

Usage: mcp_check.py URL CLIENT, CLIENT one of `legacy` (the `mcp` SDK's `Client` in
mode="legacy": initialize, then a session), `auto` (its default mode: `server/discover`
first, 2026-07-28 against a 2.x server) or `agents` (the OpenAI Agents SDK's
`MCPServerStreamableHttp`, no model call). Every await is bounded by the client's timeouts
and the caller's process timeout.
"""

import asyncio
import json
import sys

CALLS = [
    ("get_weather_data", {"location": "Paris"}),
    ("get_alert_text", {"region": "Brittany", "severity": 2}),
    ("check_station", {"station_id": "LFRN"}),
]


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def tool_view(tool):
    """What a tool list entry says, minus fields a transport may legitimately vary."""
    return dump(tool)


async def with_sdk_client(url, mode):
    from mcp import Client

    async with Client(url, mode=mode) as client:
        listed = await client.list_tools()
        tools = [tool_view(t) for t in listed.tools]
        calls = [dump(await client.call_tool(name, args)) for name, args in CALLS]
    return tools, calls


async def with_agents(url):
    from agents.mcp import MCPServerStreamableHttp

    params = {"url": url, "timeout": 20, "sse_read_timeout": 20}
    async with MCPServerStreamableHttp(params=params, name="weather") as server:
        tools = [tool_view(t) for t in await server.list_tools()]
        calls = [dump(await server.call_tool(name, args)) for name, args in CALLS]
    return tools, calls


async def main():
    url, client = sys.argv[1:3]
    if client == "agents":
        tools, calls = await with_agents(url)
    else:
        tools, calls = await with_sdk_client(url, client)
    tools.sort(key=lambda t: t["name"])
    print(json.dumps({"tools": tools, "calls": calls}, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(main(), 60))

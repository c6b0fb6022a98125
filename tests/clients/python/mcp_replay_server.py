"""A small MCP server (Python `mcp` 2.x `MCPServer`) for tooltap's MCP recording and replay tests.

Usage: python mcp_replay_server.py [json|sse] [stateful|stateless]

Binds 127.0.0.1 on an ephemeral port and prints one JSON line, {"port": N}, once it listens.
Tools: `get_weather` declares an `outputSchema` (a pydantic return type) and answers with
`structuredContent`; `shout` declares none (structured_output=False) and answers with text only.
"""

import asyncio
import json
import socket
import sys

import uvicorn
from pydantic import BaseModel

from mcp.server import MCPServer


class Weather(BaseModel):
    temperature: float
    conditions: str


server = MCPServer("weather")


@server.tool()
def get_weather(location: str) -> Weather:
    """Current weather for a location."""
    return Weather(temperature=22.5, conditions=f"partly cloudy in {location}")


@server.tool(structured_output=False)
def shout(message: str) -> str:
    """The message in capitals."""
    return message.upper()


async def main() -> None:
    body = sys.argv[1] if len(sys.argv) > 1 else "sse"
    state = sys.argv[2] if len(sys.argv) > 2 else "stateful"
    app = server.streamable_http_app(
        json_response=(body == "json"), stateless_http=(state == "stateless")
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn_server = uvicorn.Server(config)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    await uvicorn_server.serve(sockets=[sock])


if __name__ == "__main__":
    asyncio.run(main())

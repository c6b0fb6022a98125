"""An MCP server on the official Python SDK (`mcp` 2.x, `MCPServer`) that tooltap's MCP
acceptance tests run as the upstream: `get_weather_data` returns a pydantic model (so it
declares an `outputSchema` and answers with `structuredContent`), `get_alert_text` returns
plain text and declares none, `check_station` always raises (an `isError: true` result).

Usage: weather.py (json|sse) (stateful|stateless) ACCESS_LOG. It binds 127.0.0.1 on an
ephemeral port, prints `{"port": N}` as its first stdout line, serves `/mcp` (Streamable
HTTP, JSON or SSE answers, with or without `Mcp-Session-Id`) and appends one line per HTTP
request it answered, `METHOD PATH STATUS`, to ACCESS_LOG: the tests read it to prove a GET
stream and a DELETE reached the server through tooltap.
"""

import asyncio
import json
import socket
import sys

import uvicorn
from pydantic import BaseModel, Field

from mcp.server import MCPServer


class WeatherData(BaseModel):
    """What get_weather_data answers, as structured content."""

    location: str
    temperature_c: float = Field(description="air temperature in degrees Celsius")
    conditions: str
    humidity: int


server = MCPServer("weather")


@server.tool()
def get_weather_data(location: str) -> WeatherData:
    """The current weather at a location."""
    return WeatherData(location=location, temperature_c=21.5, conditions="sunny", humidity=40)


@server.tool(structured_output=False)
def get_alert_text(region: str, severity: int = 1) -> str:
    """The weather alerts of a region, as text."""
    return f"No alert of severity {severity} or more in {region}."


@server.tool()
def check_station(station_id: str) -> str:
    """Checks a weather station; this one is always offline."""
    raise ValueError(f"station {station_id} is offline")


def access_logged(app, path):
    """The ASGI app `app`, appending `METHOD PATH STATUS` to `path` for every HTTP answer."""

    async def logged(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_logged(message):
            if message["type"] == "http.response.start":
                with open(path, "a", encoding="utf-8") as log:
                    log.write(f"{scope['method']} {scope['path']} {message['status']}\n")
            await send(message)

        await app(scope, receive, send_logged)

    return logged


async def main():
    body, state, access_log = sys.argv[1:4]
    app = server.streamable_http_app(
        json_response=body == "json",
        stateless_http=state == "stateless",
        host="127.0.0.1",
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(access_logged(app, access_log), log_level="warning", lifespan="on")
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    asyncio.run(main())

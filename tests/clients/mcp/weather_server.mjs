// An MCP server on the official TypeScript SDK 1.x (McpServer + StreamableHTTPServerTransport)
// that tooltap's MCP acceptance tests run as the upstream, with the same three tools as
// tests/clients/python/mcp_servers/weather.py: get_weather_data declares an outputSchema and
// answers with structuredContent, get_alert_text declares none, check_station answers an
// isError result.
//
// Usage: node weather_server.mjs (json|sse) ACCESS_LOG. Sessionful (one transport per
// Mcp-Session-Id), bound to 127.0.0.1 on an ephemeral port printed as the first stdout line,
// `{"port": N}`; every answered HTTP request appends `METHOD PATH STATUS` to ACCESS_LOG.
import { randomUUID } from "node:crypto";
import { appendFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const [body, accessLog] = process.argv.slice(2);

function weatherServer() {
  const server = new McpServer({ name: "weather-ts", version: "0.1.0" });
  server.registerTool(
    "get_weather_data",
    {
      description: "The current weather at a location.",
      inputSchema: { location: z.string() },
      outputSchema: {
        location: z.string(),
        temperature_c: z.number(),
        conditions: z.string(),
        humidity: z.number().int(),
      },
    },
    async ({ location }) => {
      const weather = { location, temperature_c: 21.5, conditions: "sunny", humidity: 40 };
      return {
        content: [{ type: "text", text: JSON.stringify(weather) }],
        structuredContent: weather,
      };
    },
  );
  server.registerTool(
    "get_alert_text",
    {
      description: "The weather alerts of a region, as text.",
      inputSchema: { region: z.string(), severity: z.number().int().optional() },
    },
    async ({ region, severity = 1 }) => ({
      content: [{ type: "text", text: `No alert of severity ${severity} or more in ${region}.` }],
    }),
  );
  server.registerTool(
    "check_station",
    {
      description: "Checks a weather station; this one is always offline.",
      inputSchema: { station_id: z.string() },
    },
    async ({ station_id }) => ({
      content: [{ type: "text", text: `station ${station_id} is offline` }],
      isError: true,
    }),
  );
  return server;
}

const transports = new Map();
const app = createMcpExpressApp();
app.use((req, res, next) => {
  res.on("finish", () => appendFileSync(accessLog, `${req.method} ${req.path} ${res.statusCode}\n`));
  next();
});

app.post("/mcp", async (req, res) => {
  const id = req.headers["mcp-session-id"];
  let transport = id ? transports.get(id) : undefined;
  if (!transport) {
    if (id || !isInitializeRequest(req.body)) {
      res.status(id ? 404 : 400).json({
        jsonrpc: "2.0",
        error: { code: -32000, message: id ? "Session not found" : "No session" },
        id: null,
      });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: body === "json",
      onsessioninitialized: (sessionId) => transports.set(sessionId, transport),
    });
    transport.onclose = () => transports.delete(transport.sessionId);
    await weatherServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});

const bySession = async (req, res) => {
  const transport = transports.get(req.headers["mcp-session-id"]);
  if (!transport) {
    res.status(404).send("Session not found");
    return;
  }
  await transport.handleRequest(req, res);
};
app.get("/mcp", bySession);
app.delete("/mcp", bySession);

const listener = app.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: listener.address().port }));
});

// Lists and calls the tools of an MCP server with the official TypeScript SDK 1.x client
// (Client + StreamableHTTPClientTransport), then ends the session with a DELETE, and prints
// what it got as JSON: the sorted tool list and each call's result, as the SDK parsed them
// (the SDK zod-validates every result and checks structuredContent against outputSchema).
//
// Usage: node weather_client.mjs URL. Every request is bounded by the SDK's timeout option.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const CALLS = [
  ["get_weather_data", { location: "Paris" }],
  ["get_alert_text", { region: "Brittany", severity: 2 }],
  ["check_station", { station_id: "LFRN" }],
];
const bounded = { timeout: 20000 };

const client = new Client({ name: "tooltap-acceptance", version: "0.1.0" });
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
await client.connect(transport, bounded);
const { tools } = await client.listTools(undefined, bounded);
tools.sort((a, b) => a.name.localeCompare(b.name));
const calls = [];
for (const [name, args] of CALLS) {
  calls.push(await client.callTool({ name, arguments: args }, undefined, bounded));
}
await transport.terminateSession();
await client.close();
console.log(JSON.stringify({ tools, calls }));

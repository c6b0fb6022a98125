// Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, installed here
// by scripts/test) on Node 20: registers conformance_hooks.mjs, then loads the suite's CLI with
// this process's arguments, e.g. `node conformance.mjs server --url http://127.0.0.1:PORT/mcp`.
import { register } from "node:module";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

register("./conformance_hooks.mjs", import.meta.url);
const require = createRequire(import.meta.url);
const cli = require.resolve("@modelcontextprotocol/conformance/dist/index.js");
await import(pathToFileURL(cli).href);

// Drives the official openai Node SDK's Responses API (create buffered and streamed, and the
// responses.stream() helper) against one base URL and prints what the client got as JSON.
// Usage: node responses_check.mjs BASE_URL OPENAI_PACKAGE_DIR (the seed suite's node_modules/openai).
import { createRequire } from "node:module";
import path from "node:path";

const [baseURL, openaiDir] = process.argv.slice(2);
const require = createRequire(path.join(openaiDir, "package.json"));
const OpenAI = require(openaiDir);
const client = new OpenAI({ baseURL, apiKey: "sk-test", maxRetries: 0 });
const tools = [{
  type: "function", name: "get_weather", description: "Current weather", strict: true,
  parameters: { type: "object", properties: { location: { type: "string" } },
                required: ["location"], additionalProperties: false },
}];
const items = (output) => output.map((i) => ({
  type: i.type, name: i.name ?? null, arguments: i.arguments ?? null,
  call_id_is_str: typeof i.call_id === "string",
}));

const out = {};
const r = await client.responses.create({ model: "gpt-5.4", input: "What is the weather in Paris and Oslo?", tools });
out.buffered = { status: r.status, items: items(r.output) };

const events = [];
let final = null;
const stream = await client.responses.create({ model: "gpt-5.4", input: "What is the weather in Paris?", tools, stream: true });
for await (const event of stream) {
  events.push(event.type);
  if (event.type === "response.completed") final = event.response;
}
out.stream = { events, items: final ? items(final.output) : null };

const helper = client.responses.stream({ model: "gpt-5.4", input: "What is the weather in Paris and Oslo?", tools });
const doneArguments = [];
for await (const event of helper) {
  if (event.type === "response.function_call_arguments.done") doneArguments.push(event.arguments);
}
const response = await helper.finalResponse();
out.helper = { done_arguments: doneArguments, status: response.status, items: items(response.output) };
console.log(JSON.stringify(out));

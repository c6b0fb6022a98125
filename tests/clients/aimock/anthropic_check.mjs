// Drives the official @anthropic-ai/sdk Node SDK's Messages API (messages.create buffered and
// streamed, and the messages.stream() helper's finalMessage()) against one base URL and prints
// what the client got as JSON. Usage: node anthropic_check.mjs BASE_URL [clean|broken]; `broken`
// asks for a tool the request does not declare and prints the answer or the error the SDK raised.
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, mode = "clean"] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: "sk-ant-test", maxRetries: 0 });
const model = "claude-tooltap-test";
const tools = [{
  name: "get_weather", description: "Current weather",
  input_schema: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
}];
const ask = (text) => [{ role: "user", content: text }];
const blocks = (content) => content.map((b) => ({
  type: b.type, name: b.name ?? null, input: b.input ?? null, text: b.text ?? null,
  id_ok: (b.id ?? "toolu_").startsWith("toolu_"),
}));

async function buffered(text) {
  const m = await client.messages.create({ model, max_tokens: 256, tools, messages: ask(text) });
  return { stop_reason: m.stop_reason, blocks: blocks(m.content) };
}
async function streamed(text) {
  const events = [];
  let inputJson = "";
  const stream = await client.messages.create({ model, max_tokens: 256, tools, messages: ask(text), stream: true });
  for await (const event of stream) {
    events.push(event.type);
    if (event.type === "content_block_delta" && event.delta.type === "input_json_delta") inputJson += event.delta.partial_json;
  }
  return { events, input_json: inputJson };
}
async function helper(text) {
  const message = await client.messages.stream({ model, max_tokens: 256, tools, messages: ask(text) }).finalMessage();
  return { stop_reason: message.stop_reason, blocks: blocks(message.content) };
}
async function guarded(call, text) {
  try {
    return await call(text);
  } catch (error) {
    return { error: error.constructor.name, message: String(error.message) };
  }
}

let out;
if (mode === "clean") {
  out = {
    buffered: await buffered("What is the weather in Paris and Oslo?"),
    stream: await streamed("What is the weather in Paris?"),
    helper: await helper("What is the weather in Paris and Oslo?"),
  };
} else {
  const text = "What is the local time in Tokyo?";
  out = { buffered: await guarded(buffered, text), stream: await guarded(streamed, text), helper: await guarded(helper, text) };
}
console.log(JSON.stringify(out));

// What the official openai Node SDK hands an app for one exchange, quirk or not.
//
// Usage: node quirk_probe.mjs SEED_SUITE_DIR BASE_URL MODE REQUEST_JSON
//
// The openai package is the seed suite's (tests/clients/seed-suite, installed by scripts/test).
// MODE: `create` (buffered), `create-stream` (chunks accumulated by index, arguments
// concatenated) or `stream-helper` (client.chat.completions.stream() + finalChatCompletion()).
// Prints the same JSON object as tests/clients/python/quirk_probe.py.
import { createRequire } from "node:module";
import path from "node:path";

const [seedSuite, baseURL, mode, requestText] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(seedSuite), "package.json"));
const OpenAI = require("openai").default ?? require("openai");
const client = new OpenAI({ baseURL, apiKey: "test", maxRetries: 0, timeout: 20000 });
const request = JSON.parse(requestText);
delete request.stream_options;

const describe = (v) => (typeof v === "string" || v == null ? v ?? null : { non_string: Array.isArray(v) ? "list" : typeof v, value: v });
const fromCompletion = (completion) => {
  const message = completion.choices[0].message;
  return {
    finish_reason: completion.choices[0].finish_reason ?? null,
    content: message.content ?? null,
    calls: (message.tool_calls ?? []).map((c) => ({ id: c.id ?? null, name: c.function?.name ?? null, arguments: describe(c.function?.arguments) })),
  };
};

async function run() {
  if (mode === "create") {
    delete request.stream;
    return fromCompletion(await client.chat.completions.create(request));
  }
  if (mode === "create-stream") {
    const calls = new Map();
    let content = null;
    let finish = null;
    for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
      for (const choice of chunk.choices) {
        const delta = choice.delta ?? {};
        if (delta.content != null) content = (content ?? "") + delta.content;
        for (const f of delta.tool_calls ?? []) {
          if (!calls.has(f.index)) calls.set(f.index, { id: null, name: null, arguments: "" });
          const call = calls.get(f.index);
          if (f.id) call.id = f.id;
          if (f.function?.name) call.name = f.function.name;
          if (f.function?.arguments != null) call.arguments += f.function.arguments;
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    return { finish_reason: finish, content, calls: [...calls.values()] };
  }
  delete request.stream;
  const stream = client.chat.completions.stream(request);
  return fromCompletion(await stream.finalChatCompletion());
}

try {
  console.log(JSON.stringify({ outcome: "returned", ...(await run()) }));
} catch (error) {
  console.log(JSON.stringify({ outcome: "raised", error: `${error?.constructor?.name ?? "Error"}: ${String(error?.message ?? error).slice(0, 160)}` }));
}

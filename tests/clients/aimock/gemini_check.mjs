// Drives the official @google/genai Node SDK (the Gemini API: ai.models.generateContent and
// generateContentStream) against one base URL and prints what the client got as JSON: per call
// the function calls (name, args, id), the text, the finish reasons as the SDK surfaced them, and
// what the SDK warned on the console. Cases: one call, parallel calls in one event, parallel calls
// in separate events, text only, and a two-turn loop that sends the function responses back.
// Usage: node gemini_check.mjs BASE_URL [faithful|unfaithful]; `unfaithful` asks for aimock's
// default tool-call answer, whose finishReason is `FUNCTION_CALL`, a value Gemini does not have,
// and prints per call what the SDK got or the error it raised (enforce mode makes one).
import { GoogleGenAI } from "@google/genai";

const [baseUrl, mode = "faithful"] = process.argv.slice(2);
// aimock routes only /v1beta.
const ai = new GoogleGenAI({ apiKey: "gemini-test-key", httpOptions: { baseUrl, apiVersion: "v1beta" } });
const model = "gemini-2.5-flash";
const config = {
  tools: [{
    functionDeclarations: [{
      name: "get_forecast", description: "Today's forecast for a city",
      parametersJsonSchema: {
        type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false,
      },
    }],
  }],
};
const forecast = (city) => ({ city, forecast: "sunny", degrees: 24 });

const warned = [];
const warn = console.warn;
console.warn = (...args) => warned.push(args.map(String).join(" "));

function seen(response) {
  const candidates = response.candidates ?? [];
  const parts = candidates.flatMap((c) => c.content?.parts ?? []);
  return {
    calls: (response.functionCalls ?? []).map((c) => ({ name: c.name, args: c.args, id: c.id ?? null })),
    text: parts.filter((p) => typeof p.text === "string" && !p.thought).map((p) => p.text).join(""),
    finish_reasons: candidates.map((c) => c.finishReason ?? null),
  };
}
async function recorded(call) {
  warned.length = 0;
  const got = await call();
  return { ...got, warnings: [...new Set(warned)].sort() };
}
const buffered = (text) => recorded(async () => seen(await ai.models.generateContent({ model, contents: text, config })));
const streamed = (text) => recorded(async () => {
  const chunks = [];
  for await (const chunk of await ai.models.generateContentStream({ model, contents: text, config })) chunks.push(seen(chunk));
  return { chunks };
});
const twoTurns = (text) => recorded(async () => {
  const ask = { role: "user", parts: [{ text }] };
  const first = await ai.models.generateContent({ model, contents: [ask], config });
  const answers = first.functionCalls.map((c) => ({ functionResponse: { id: c.id, name: c.name, response: forecast(c.args.city) } }));
  const second = await ai.models.generateContent({
    model, contents: [ask, first.candidates[0].content, { role: "user", parts: answers }], config,
  });
  return { first: seen(first), second: seen(second) };
});

async function guarded(call, text) {
  try {
    return await call(text);
  } catch (error) {
    return { error: error.constructor.name, message: String(error.message) };
  }
}

const out = {};
if (mode === "faithful") {
  const cases = {
    one: "Gemini case one: forecast for Lyon",
    parallel: "Gemini case parallel: forecast for Lyon and Nantes",
    split: "Gemini case split: forecast for Lille and Nice",
    text: "Gemini case text: say hello",
  };
  for (const [name, text] of Object.entries(cases)) out[name] = { buffered: await buffered(text), stream: await streamed(text) };
  out.loop = await twoTurns(cases.split);
} else {
  const text = "Gemini case default: forecast for Brest";
  out.default = { buffered: await guarded(buffered, text), stream: await guarded(streamed, text) };
}
console.warn = warn;
console.log(JSON.stringify(out));

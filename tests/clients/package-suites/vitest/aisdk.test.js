// The Vercel AI SDK (`ai` with `@ai-sdk/openai`, Chat Completions) running its own two-turn
// tool loop through tooltap: the model asks for the tool, the SDK runs it and sends its result
// back, the model answers. Recorded in `once`, replayed offline in `none`.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import { expect, test } from "vitest";
import { MODEL, parameters } from "./tools.js";

test("ai sdk tool loop", async () => {
  // createOpenAI reads OPENAI_BASE_URL and OPENAI_API_KEY, which tooltap/vitest/setup set.
  const openai = createOpenAI();
  const calls = [];
  const result = await generateText({
    model: openai.chat(MODEL),
    prompt: "Suite loop: weather in Lyon",
    tools: {
      get_weather: tool({
        description: "Current weather in a city",
        inputSchema: jsonSchema(parameters),
        execute: async ({ city }) => {
          calls.push(city);
          return "sunny, 24 degrees";
        },
      }),
    },
    stopWhen: stepCountIs(2),
    maxRetries: 0,
  });
  expect(calls).toEqual(["Lyon"]);
  expect(result.steps.length).toBe(2);
  expect(result.text).toBe("Lyon: sunny, 24 degrees.");
});

// Never recorded: in mode none its request misses, and the run's failure names the closest
// recording and the pointer that differs.
import OpenAI from "openai";
import { test } from "vitest";
import { MODEL, chatTools } from "./tools.js";

test("new city", async () => {
  await new OpenAI({ maxRetries: 0 }).chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Suite chat: weather in Nancy" }],
    tools: chatTools,
  });
});

// aimock answers with arguments the tool's schema forbids: the run must fail naming the rule
// (tool_call.arguments_schema), whether recording or replaying.
import OpenAI from "openai";
import { expect, test } from "vitest";
import { MODEL, chatTools } from "./tools.js";

test("violation", async () => {
  const answer = await new OpenAI().chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Suite violation: weather in Brest" }],
    tools: chatTools,
  });
  expect(JSON.parse(answer.choices[0].message.tool_calls[0].function.arguments)).toEqual({ town: "Brest" });
});

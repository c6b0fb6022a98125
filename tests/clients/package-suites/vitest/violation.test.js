// aimock answers "violation" with arguments the tool's schema forbids: that test must fail
// naming the rule (tool_call.arguments_schema), whether recording or replaying, while its
// neighbours before and after it, whose answers keep the contract, pass.
import OpenAI from "openai";
import { expect, test } from "vitest";
import { MODEL, chatTools } from "./tools.js";

async function weather(city) {
  const answer = await new OpenAI().chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: `Suite ${city === "Brest" ? "violation" : "chat"}: weather in ${city}` }],
    tools: chatTools,
  });
  return JSON.parse(answer.choices[0].message.tool_calls[0].function.arguments);
}

test("neighbour before", async () => {
  expect(await weather("Nantes")).toEqual({ city: "Nantes" });
});

test("violation", async () => {
  expect(await weather("Brest")).toEqual({ town: "Brest" });
});

test("neighbour after", async () => {
  expect(await weather("Nantes")).toEqual({ city: "Nantes" });
});

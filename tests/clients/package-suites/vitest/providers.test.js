// Chat Completions, the Responses API and Anthropic Messages, buffered and streamed, and a
// two-turn tool loop, through the openai and @anthropic-ai/sdk Node SDKs.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { describe, expect, test } from "vitest";
import { MODEL, anthropicTools, chatTools, responsesTools } from "./tools.js";

describe.each([false, true])("stream %s", (stream) => {
  test("chat", async () => {
    const client = new OpenAI();
    const request = { model: MODEL, messages: [{ role: "user", content: "Suite chat: weather in Nantes" }], tools: chatTools };
    let name;
    let args = "";
    if (stream) {
      for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
        for (const delta of chunk.choices[0]?.delta?.tool_calls ?? []) {
          name = delta.function?.name ?? name;
          args += delta.function?.arguments ?? "";
        }
      }
    } else {
      const call = (await client.chat.completions.create(request)).choices[0].message.tool_calls[0];
      name = call.function.name;
      args = call.function.arguments;
    }
    expect([name, JSON.parse(args)]).toEqual(["get_weather", { city: "Nantes" }]);
  });

  test("responses", async () => {
    const client = new OpenAI();
    const request = { model: MODEL, input: "Suite responses: weather in Oslo", tools: responsesTools };
    const response = stream
      ? await client.responses.stream(request).finalResponse()
      : await client.responses.create(request);
    const calls = response.output.filter((item) => item.type === "function_call");
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["get_weather", { city: "Oslo" }]]);
  });

  test("anthropic", async () => {
    const client = new Anthropic();
    const request = {
      model: "claude-sonnet-4-5",
      max_tokens: 256,
      tools: anthropicTools,
      messages: [{ role: "user", content: "Suite anthropic: weather in Rome" }],
    };
    const message = stream
      ? await client.messages.stream(request).finalMessage()
      : await client.messages.create(request);
    const uses = message.content.filter((block) => block.type === "tool_use");
    expect(uses.map((u) => [u.name, u.input])).toEqual([["get_weather", { city: "Rome" }]]);
  });
});

test("tool loop", async () => {
  const client = new OpenAI();
  const messages = [{ role: "user", content: "Suite loop: weather in Lyon" }];
  const first = await client.chat.completions.create({ model: MODEL, messages, tools: chatTools });
  const call = first.choices[0].message.tool_calls[0];
  expect(JSON.parse(call.function.arguments)).toEqual({ city: "Lyon" });
  messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "sunny, 24 degrees" });
  const second = await client.chat.completions.create({ model: MODEL, messages, tools: chatTools });
  expect(second.choices[0].message.content).toBe("Lyon: sunny, 24 degrees.");
});

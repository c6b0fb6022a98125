// The tool every case declares, in the Chat Completions, Responses and Anthropic shapes.
export const parameters = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
  additionalProperties: false,
};
export const chatTools = [
  { type: "function", function: { name: "get_weather", description: "Current weather in a city", parameters } },
];
export const responsesTools = [{ type: "function", name: "get_weather", description: "Current weather in a city", parameters }];
export const anthropicTools = [{ name: "get_weather", description: "Current weather in a city", input_schema: parameters }];
export const MODEL = "gpt-4o-mini";

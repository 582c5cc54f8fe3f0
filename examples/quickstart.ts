// The README's first example. Run it with: npx tsx examples/quickstart.ts
import { Agent, defineTool, ScriptedModel } from "agentloop";

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  execute: async ({ city }) => `${city}: 21°C and sunny`,
});

// No API key needed: a scripted model asks for two tool calls in one wave, then answers.
// Swap in a real one with `await resolveModel("openai:gpt-4.1")` from "agentloop/providers".
const model = new ScriptedModel([
  JSON.stringify({
    tool_calls: [
      { name: "get_weather", arguments: { city: "Paris" } },
      { name: "get_weather", arguments: { city: "Oslo" } },
    ],
  }),
  "Paris and Oslo are both 21°C and sunny today.",
]);

const agent = new Agent({ name: "weather", instructions: "Answer briefly.", model, tools: [weather], maxTurns: 5 });
const run = agent.run("What's the weather in Paris and Oslo?");

for await (const event of run) {
  if (event.type === "tool-end") console.log(`[${event.name} ${event.durationMs} ms] ${event.output}`);
  if (event.type === "text-delta") process.stdout.write(event.delta);
}
const result = await run; // never rejects: the result says how the run ended
console.log(`\n${result.state} after ${result.turns} model calls (${result.usage.totalTokens} tokens)`);

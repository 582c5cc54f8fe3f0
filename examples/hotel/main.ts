// Runs the hotel assistant on its scripted plan and prints every event as it happens.
//   npx tsx examples/hotel/main.ts
import { DEMO_TODAY, hotelAgent } from "./agent.js";

const agent = hotelAgent();
const run = agent.run("I need availability for Hanukkah and also next weekend", { inputs: { today: DEMO_TODAY } });
for await (const event of run) {
  if (event.type === "progress") console.log(`wave ${event.step}: ${event.action} ${event.target}`);
  if (event.type === "tool-end") console.log(`  ${event.name} (${event.durationMs} ms): ${event.output}`);
  if (event.type === "text-delta") process.stdout.write(event.delta);
}
const result = await run;
console.log(`\n\n${result.state}: ${result.reason} (${result.turns} model calls, ${result.toolCalls} tool calls)`);

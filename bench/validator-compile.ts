// Not in `npm run bench`: the CPU of a tool's first validation when its JSON Schema equals one
// already compiled in another tool object (a tool built per request or per agent, the same client
// tool sent with every chat request, an MCP server's tools listed again). Since session 25 the
// validators are kept by schema text (src/tools/validate.ts), so that validation compiles nothing.
// Five rounds of 300 new tool objects; CPU per tool (process.cpuUsage), min and max of the rounds.
//
//   node --import tsx bench/validator-compile.ts
import { validateArguments } from "../src/tools/validate.js";
import type { Tool } from "../src/tools/tool.js";

const schema = () => ({
  type: "object",
  properties: { city: { type: "string", minLength: 2 }, days: { type: "integer", minimum: 1, maximum: 14 }, units: { enum: ["c", "f"] } },
  required: ["city"],
});
const tool = () => ({ name: "forecast", description: "A forecast", parameters: schema(), execute: async () => "ok" }) as unknown as Tool;

await validateArguments(tool(), { city: "Oslo" }); // ajv loaded, the schema compiled once
const rounds: number[] = [];
for (let round = 0; round < 5; round++) {
  const start = process.cpuUsage();
  for (let i = 0; i < 300; i++) await validateArguments(tool(), { city: "Oslo", days: 3 });
  const used = process.cpuUsage(start);
  rounds.push((used.user + used.system) / 1000 / 300);
}
console.log(`first validation of a new tool object with an equal schema: ${Math.min(...rounds).toFixed(3)}–${Math.max(...rounds).toFixed(3)} ms CPU (5 rounds of 300)`);

// The README's durable-run example. Needs a PostgreSQL server:
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx examples/durable/charge.ts
// Kill it (kill -9) while it waits in `ship`, run it again with the same RUN_ID: the run goes on
// from `ship`, and `charge` (done before the crash) is not called again.
import { Agent, defineTool, ScriptedModel } from "agentloop";
import { durableAgent } from "agentloop/durable";

const charge = defineTool<{ cents: number }>({
  name: "charge",
  description: "Charge the customer's card",
  parameters: { type: "object", properties: { cents: { type: "number" } }, required: ["cents"] },
  // Not idempotent: if the process dies while it runs, it is not run again (the result says so).
  execute: async ({ cents }, { idempotencyKey }) => `charged ${cents} cents (key ${idempotencyKey})`,
});

const ship = defineTool<{ item: string }>({
  name: "ship",
  description: "Ship an item",
  parameters: { type: "object", properties: { item: { type: "string" } }, required: ["item"] },
  idempotent: true, // safe to run again after a crash: the carrier dedupes on the key
  execute: async ({ item }) => {
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.SHIP_DELAY_MS ?? 0)));
    return `shipped ${item}`;
  },
});

const model = new ScriptedModel([
  JSON.stringify({ tool_calls: [{ name: "charge", arguments: { cents: 1299 } }] }),
  JSON.stringify({ tool_calls: [{ name: "ship", arguments: { item: "book" } }] }),
  "Charged and shipped.",
]);
const agent = new Agent({ name: "shop", model, tools: [charge, ship] });

const durable = durableAgent(agent, {
  databaseUrl: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
  executorId: "shop-0", // a restart with the same id recovers this process's unfinished runs
  schema: process.env.DBOS_SCHEMA, // where DBOS keeps its tables (default "dbos")
});
await durable.launch();
const runId = process.env.RUN_ID ?? `run_${Date.now()}`;
const run = await durable.run("Buy the book", { runId, onEvent: (event) => event.type === "tool-end" && console.log(event.output) });
const result = await run.result();
console.log(result.state, result.text); // COMPLETED Charged and shipped.
await durable.shutdown();

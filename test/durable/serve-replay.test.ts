// A durable `serve` run with many memory events: when its execution starts again (a resume after a
// cancel, as a recovery after a crash), the memory events it already stored are counted, all of them
// (the count once read only the session's last 500), and its replay does not store them twice. In-process (`AgentServer.fetch`), real PostgreSQL.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import pg from "pg";
import { defineTool } from "../../src/index.js";
import { createAgentServer } from "../../src/server/index.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { asyncCleanupModel, type Plan } from "./models.js";

const tag = randomUUID().slice(0, 8);
const schemas = [`t_durable_replay_${tag}`, `dbos_replay_${tag}`];

after(async () => {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

const CALLS = 300;
/** A wave of 300 `note` calls (600 memory events), then `block`, then the answer. */
const plan: Plan = (messages) => {
  const results = messages.filter((message) => message.role === "tool").length;
  if (results === 0) return { calls: Array.from({ length: CALLS }, (_, index) => ({ id: `n${index}`, name: "note", arguments: { index } })) };
  if (results === CALLS) return { calls: [{ id: "b", name: "block", arguments: {} }] };
  return { text: "All noted." };
};
const note = defineTool<{ index: number }>({ name: "note", description: "notes", parameters: { type: "object", properties: { index: { type: "number" } } }, idempotent: true, execute: ({ index }) => `noted ${index}` });
let blocked!: () => void;
const blocking = new Promise<void>((resolve) => {
  blocked = resolve;
});
let blocks = 0;
// The first execution waits until the run is cancelled; after the resume it answers at once.
const block = defineTool({
  name: "block",
  description: "blocks",
  parameters: { type: "object", properties: {} },
  idempotent: true,
  execute: (_args, context) =>
    blocks++ > 0
      ? "unblocked"
      : new Promise<string>((_resolve, reject) => {
          blocked();
          context.signal.addEventListener("abort", () => reject(new Error("aborted")));
        }),
});

test("a run with more than 500 stored memory events, executed again from its start, stores none of them twice", { timeout: 120_000 }, async () => {
  const server = await createAgentServer({
    env: {
      AGENT_NAME: "replayer",
      MEMORY_TYPE: "postgres",
      MEMORY_POSTGRES_URL: postgresUrl(),
      MEMORY_POSTGRES_SCHEMA: schemas[0]!,
      DURABLE: "true",
      DURABLE_SCHEMA: schemas[1]!,
      DURABLE_EXECUTOR_ID: `replay-${tag}`,
      // The session keeps every event of the run (the default keeps the last 500).
      MEMORY_MAX_SESSION_EVENTS: "5000",
    },
    build: { model: asyncCleanupModel(plan), tools: [note, block] },
    log: () => undefined,
  });
  const session = `long-${tag}`;
  const stored = async () =>
    ((await (await server.fetch(new Request(`http://agent/memory/events?session_id=${session}&limit=10000`))).json()) as { events: Array<{ event_type: string; content: unknown }> }).events;
  try {
    assert.equal((await server.ready()).status, "ready");
    const chat = await server.fetch(
      new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "note everything" }], session_id: session, stream: true }) }),
    );
    const runId = chat.headers.get("x-agentloop-run-id")!;
    await blocking;
    // Every result of the wave is stored before the run stops.
    while ((await stored()).filter((event) => event.event_type === "tool_result").length < CALLS) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await server.fetch(new Request(`http://agent/v1/runs/${runId}/cancel`, { method: "POST" }))).status, 200);
    await chat.text();
    // Resumed: the run executes again from its start, its recorded steps replayed.
    assert.equal((await server.fetch(new Request(`http://agent/v1/runs/${runId}/resume`, { method: "POST" }))).status, 200);
    let status = "";
    while (status !== "SUCCESS") {
      status = ((await (await server.fetch(new Request(`http://agent/v1/runs/${runId}`))).json()) as { status: string }).status;
      assert.ok(["PENDING", "ENQUEUED", "SUCCESS"].includes(status), status);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const events = await stored();
    const count = (type: string) => events.filter((event) => event.event_type === type).length;
    assert.equal(count("user_message"), 1);
    assert.equal(count("tool_call"), CALLS + 1);
    assert.equal(count("tool_result"), CALLS + 1);
    assert.equal(count("agent_response"), 1);
  } finally {
    await server.close({ graceMs: 0 });
  }
});

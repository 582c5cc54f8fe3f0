// What a durable run is given (src/durable/agent.ts): its options reach the loop as a plain run's
// do — inputs (a tool's bindings and context), history, a structured output schema, newSession (the
// memory not asked) — so a durable run answers as the plain run given the same; an agent made durable
// after the launch is refused. Real PostgreSQL, DBOS launched once (shared.ts).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { durableAgent } from "../../../src/durable/index.js";
import { Agent, defineTool, type Model, type ModelEvent } from "../../../src/index.js";
import type { SessionMemory } from "../../../src/loop/types.js";
import type { Message } from "../../../src/messages.js";
import { shared } from "./shared.js";

const text = (message: Message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content));

/** Calls `whoami` once, then answers with JSON of what it was given: the user and tool messages' texts. */
const reporter: Model = {
  provider: "test",
  modelId: "reporter",
  async *stream(request): AsyncGenerator<ModelEvent> {
    const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
    if (!request.messages.some((message) => message.role === "tool")) {
      yield { type: "tool-call-start", id: "w1", name: "whoami" };
      yield { type: "tool-call-end", id: "w1", name: "whoami", arguments: "{}" };
      yield { type: "finish", reason: { unified: "tool-calls" }, usage };
      return;
    }
    const seen = { users: request.messages.filter((m) => m.role === "user").map(text), tools: request.messages.filter((m) => m.role === "tool").map(text) };
    yield { type: "text-start", id: "t" };
    yield { type: "text-delta", id: "t", delta: JSON.stringify(seen) };
    yield { type: "text-end", id: "t" };
    yield { type: "finish", reason: { unified: "stop" }, usage };
  },
};
// A tool whose `customer` parameter is bound to the run's input of that name, and that reads the inputs from its context too.
const whoami = defineTool<{ customer: string }>({
  name: "whoami",
  description: "who the customer is",
  parameters: { type: "object", properties: { customer: { type: "string" } }, required: ["customer"] },
  bindings: { customer: "customer" },
  execute: ({ customer }, context) => `customer ${customer}, tier ${String(context.inputs.tier)}`,
});
/** A memory that remembers one user message per session, and counts its loads. */
const loads: string[] = [];
const memory: SessionMemory = {
  loadHistory: async (sessionId) => {
    loads.push(sessionId);
    return [{ role: "user", content: `remembered in ${sessionId}` }];
  },
  onEvent: () => undefined,
};
const agent = new Agent({ name: "agent-options", model: reporter, tools: [whoami], memory });
const durable = durableAgent(agent, shared);



const output = {
  type: "object",
  properties: { users: { type: "array", items: { type: "string" } }, tools: { type: "array", items: { type: "string" } } },
  required: ["users", "tools"],
} as const;

test("a durable run's inputs, history, output schema and session reach its loop: it answers as the plain run given the same", { timeout: 60_000 }, async () => {
  const history: Message[] = [{ role: "user", content: "said before" }];
  const options = { inputs: { customer: "ada", tier: "gold" }, history, output, sessionId: `sess_${randomUUID().slice(0, 8)}` };
  loads.length = 0;
  const plain = await agent.run("who am I?", options);
  const result = await (await durable.run("who am I?", options)).result();
  assert.deepEqual(plain.output, { users: [`remembered in ${options.sessionId}`, "said before", "who am I?"], tools: ["customer ada, tier gold"] });
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(result.output, plain.output);
  assert.equal(result.text, plain.text);
  assert.deepEqual(loads, [options.sessionId, options.sessionId], "each loaded the session's history");
});

test("a durable run of a new session does not ask the memory for its history, as the plain run does not", { timeout: 60_000 }, async () => {
  const options = { inputs: { customer: "bob", tier: "free" }, sessionId: `sess_${randomUUID().slice(0, 8)}`, newSession: true };
  loads.length = 0;
  const plain = await agent.run("who am I?", options);
  const result = await (await durable.run("who am I?", options)).result();
  assert.equal(plain.text, JSON.stringify({ users: ["who am I?"], tools: ["customer bob, tier free"] }));
  assert.equal(result.text, plain.text);
  assert.deepEqual(loads, []);
});

test("a durable agent created after launch() is refused, naming it (DBOS registers the workflows before it starts)", () => {
  const name = `agent-late-${randomUUID().slice(0, 8)}`;
  assert.throws(() => durableAgent(new Agent({ name, model: reporter }), shared), {
    message: `durableAgent: agent "${name}" is created after launch(): create every durable agent before (DBOS registers their workflows before it starts)`,
  });
});

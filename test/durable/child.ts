// A process that runs (or recovers) one durable run, for test/durable/durable.test.ts and the bench.
// Env: PG_URL, SCHEMA, EXECUTOR, RUN_ID, FILE (tool executions are appended to it), START=1 to start
// the run (else only launch, which recovers it), HANG_AT=n (tool call n hangs: the parent kills us),
// IDEMPOTENT=1 (the tool says it is idempotent), APPROVAL=1 (call 2 needs approval), DECIDE=1 (approve it).
import { appendFileSync } from "node:fs";
import { durableAgent } from "../../src/durable/index.js";
import { Agent, defineTool, type Model, type ModelEvent, type ModelRequest } from "../../src/index.js";

const env = process.env;
const file = env.FILE!;
const hangAt = Number(env.HANG_AT ?? 0);

/** Answers from the conversation (as a real, stateless model does): four waves of one call, then the answer. */
const model: Model = {
  provider: "test",
  modelId: "plan",
  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const results = request.messages.filter((message) => message.role === "tool");
    if (results.length < 4) {
      const n = results.length + 1;
      yield { type: "tool-call-start", id: `call_${n}`, name: "step" };
      yield { type: "tool-call-end", id: `call_${n}`, name: "step", arguments: JSON.stringify({ n }) };
      yield { type: "finish", reason: { unified: "tool-calls" }, usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } };
      return;
    }
    const text = `done: ${results.map((message) => (typeof message.content === "string" ? message.content : "")).join(" | ")}`;
    yield { type: "text-start", id: "t" };
    yield { type: "text-delta", id: "t", delta: text };
    yield { type: "text-end", id: "t" };
    yield { type: "finish", reason: { unified: "stop" }, usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } };
  },
};

const step = defineTool<{ n: number }>({
  name: "step",
  description: "Does step n",
  parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  sequential: true,
  idempotent: env.IDEMPOTENT === "1",
  // APPROVAL=1: the second call waits for a person's decision.
  needsApproval: ({ n }) => env.APPROVAL === "1" && n === 2,
  async execute({ n }, context) {
    appendFileSync(file, `start ${n} ${context.idempotencyKey}\n`);
    if (n === hangAt) {
      process.stdout.write(`hanging ${n}\n`);
      await new Promise(() => undefined);
    }
    appendFileSync(file, `done ${n}\n`);
    return `step ${n} ok`;
  },
});

const agent = new Agent({ name: "durable-test", model, tools: [step] });
const durable = durableAgent(agent, { databaseUrl: env.PG_URL!, schema: env.SCHEMA, executorId: env.EXECUTOR, logLevel: "error" });
const events: string[] = [];
await durable.launch();
const runId = env.RUN_ID!;
const onEvent = (event: { type: string }) => {
  events.push(event.type);
  if (event.type === "approval-request") process.stdout.write("approval requested\n");
};
const run = env.START === "1" ? await durable.run("do the four steps", { runId, onEvent }) : durable.retrieve(runId);
// DECIDE=1: approve the waiting call (from this process; any process on the database could).
if (env.DECIDE === "1") await durable.decide(runId, { call_2: { approve: true } });
const result = await run.result();
process.stdout.write(`${JSON.stringify({ result, events })}\n`);
await durable.shutdown();
process.exit(0);

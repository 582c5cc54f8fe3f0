// An `agentloop serve` replica in durable mode, for test/durable/replicas.test.ts and bench/durable-recovery.ts:
// the server of `startAgentServer` with a model that answers from the conversation (as a real model
// does, so a recovered run asks it only what was not answered) and one idempotent tool that takes
// WORK_MS, and `pay` (needs approval; "pay <n>" asks for it, each execution a line in PAY_LOG). Env: the server's (AGENT_PORT, MEMORY_*, DURABLE*), APPROVAL_TIMEOUT_MS, WORK_MS, ANSWER_WORDS and DELTA_MS (a longer, slower answer). Prints "listening <url>".
import { appendFileSync } from "node:fs";
import { startAgentServer } from "../../src/server/index.js";
import { defineTool, type Model, type ModelEvent, type ModelRequest } from "../../src/index.js";

const workMs = Number(process.env.WORK_MS ?? 200);

const model: Model = {
  provider: "test",
  modelId: "conversation",
  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const last = request.messages.at(-1);
    const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
    if (last?.role === "user") {
      const text = typeof last.content === "string" ? last.content : "";
      const amount = /^pay (\d+)/.exec(text)?.[1];
      if (amount) {
        yield { type: "tool-call-start", id: "call_pay", name: "pay" };
        yield { type: "tool-call-end", id: "call_pay", name: "pay", arguments: JSON.stringify({ amount: Number(amount) }) };
        yield { type: "finish", reason: { unified: "tool-calls" }, usage };
        return;
      }
      yield { type: "tool-call-start", id: "call_work", name: "work" };
      yield { type: "tool-call-end", id: "call_work", name: "work", arguments: JSON.stringify({ task: text }) };
      yield { type: "finish", reason: { unified: "tool-calls" }, usage };
      return;
    }
    const result = last?.role === "tool" && typeof last.content === "string" ? last.content : "?";
    yield { type: "text-start", id: "t" };
    // ANSWER_WORDS=n: n more words, DELTA_MS apart (a model call long enough to be killed in).
    const extra = Array.from({ length: Number(process.env.ANSWER_WORDS ?? 0) }, (_, index) => ` w${index + 1}`).join("");
    for (const word of `Done: ${result}.${extra}`.split(/(?<= )/)) {
      if (process.env.DELTA_MS) await new Promise((resolve) => setTimeout(resolve, Number(process.env.DELTA_MS)));
      yield { type: "text-delta", id: "t", delta: word };
    }
    yield { type: "text-end", id: "t" };
    yield { type: "finish", reason: { unified: "stop" }, usage };
  },
};

const work = defineTool<{ task: string }>({
  name: "work",
  description: "Works on a task",
  parameters: { type: "object", properties: { task: { type: "string" } }, required: ["task"] },
  idempotent: true,
  async execute({ task }, context) {
    // As a tool should, it stops when its run is aborted (a cancelled durable run).
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, workMs);
      context.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      });
    });
    return `worked on ${task}`;
  },
});

// Needs a person's approval; each execution appends a line to PAY_LOG (counted across processes).
const pay = defineTool<{ amount: number }>({
  name: "pay",
  description: "Pays an amount",
  parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  needsApproval: true,
  execute({ amount }, context) {
    if (process.env.PAY_LOG) appendFileSync(process.env.PAY_LOG, `${context.idempotencyKey} ${amount}\n`);
    return `paid ${amount}`;
  },
});

// APPROVAL_TIMEOUT_MS: how long a run waits for approvals (the agent file's approvals.timeoutMs).
const file = process.env.APPROVAL_TIMEOUT_MS ? { approvals: { timeoutMs: Number(process.env.APPROVAL_TIMEOUT_MS) } } : undefined;
const server = await startAgentServer({ host: "127.0.0.1", file, build: { model, tools: [work, pay] }, log: (line) => process.stderr.write(`${line}\n`) });
await server.ready();
process.stdout.write(`listening ${server.url}\n`);

// An `agentloop serve` replica in durable mode, for test/durable/replicas.test.ts and bench/durable-recovery.ts:
// the server of `startAgentServer` with a model that answers from the conversation (as a real model
// does, so a recovered run asks it only what was not answered), served by a loopback OpenAI-compatible server, and one idempotent tool that takes
// WORK_MS, and `pay` (needs approval; "pay <n>" asks for it, each execution a line in PAY_LOG). Env: the server's (AGENT_PORT, MEMORY_*, DURABLE*), APPROVAL_TIMEOUT_MS, WORK_MS, ANSWER_WORDS and DELTA_MS (a longer, slower answer). Prints "listening <url>".
import { appendFileSync } from "node:fs";
import { startAgentServer } from "../../src/server/index.js";
import { defineTool, type Model } from "../../src/index.js";
import { asyncCleanupModel, httpModel, type Plan, planServer, withAsyncCleanup } from "./models.js";

const workMs = Number(process.env.WORK_MS ?? 200);

// "pay <n>" asks for `pay`, any other input for `work`; after the result, the answer "Done: <result>."
// (ANSWER_WORDS=n: n more words, each frame DELTA_MS apart: a model call long enough to be killed in).
// "pay <n> after <k>": first a wave of k `work` calls, then `pay`.
const plan: Plan = (messages) => {
  const last = messages.at(-1);
  const input = messages.findLast((message) => message.role === "user");
  const text = typeof input?.content === "string" ? input.content : "";
  const [, amount, after] = /^pay (\d+)(?: after (\d+))?/.exec(text) ?? [];
  const payCall = { calls: [{ id: "call_pay", name: "pay", arguments: { amount: Number(amount) } }] };
  if (last?.role === "user") {
    if (after) return { calls: Array.from({ length: Number(after) }, (_, index) => ({ id: `call_work_${index}`, name: "work", arguments: { task: `part ${index}` } })) };
    if (amount) return payCall;
    return { calls: [{ id: "call_work", name: "work", arguments: { task: text } }] };
  }
  if (after && last?.role === "tool" && last.toolName === "work") return payCall;
  const result = last?.role === "tool" && typeof last.content === "string" ? last.content : "?";
  const extra = Array.from({ length: Number(process.env.ANSWER_WORDS ?? 0) }, (_, index) => ` w${index + 1}`).join("");
  return { text: `Done: ${result}.${extra}` };
};
// The model: the Chat Completions adapter (agentloop/openai) on a loopback OpenAI-compatible server
// this process starts, its stream's cleanup made asynchronous on top (test/durable/models.ts);
// MODEL=in-process: the plan in process (the bench, whose figures leave the model's cost out).
const model: Model =
  process.env.MODEL === "in-process"
    ? asyncCleanupModel(plan, { asyncCleanup: false })
    : withAsyncCleanup(httpModel((await planServer(plan, { textDelayMs: Number(process.env.DELTA_MS ?? 0) })).url));

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
  async execute({ amount }, context) {
    if (process.env.PAY_LOG) appendFileSync(process.env.PAY_LOG, `${context.idempotencyKey} ${amount}\n`);
    // PAY_HANG=1: the payment never returns (the test kills the replica while it runs).
    if (process.env.PAY_HANG === "1") await new Promise(() => undefined);
    return `paid ${amount}`;
  },
});

// APPROVAL_TIMEOUT_MS: how long a run waits for approvals (the agent file's approvals.timeoutMs).
const file = process.env.APPROVAL_TIMEOUT_MS ? { approvals: { timeoutMs: Number(process.env.APPROVAL_TIMEOUT_MS) } } : undefined;
const agentServer = await startAgentServer({ host: "127.0.0.1", file, build: { model, tools: [work, pay] }, log: (line) => process.stderr.write(`${line}\n`) });
await agentServer.ready();
process.stdout.write(`listening ${agentServer.url}\n`);

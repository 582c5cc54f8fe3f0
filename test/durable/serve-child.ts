// An `agentloop serve` replica in durable mode, for test/durable/replicas.test.ts and bench/durable-recovery.ts:
// the server of `startAgentServer` with a model that answers from the conversation (as a real model
// does, so a recovered run asks it only what was not answered) and one idempotent tool that takes
// WORK_MS. Env: the server's (AGENT_PORT, MEMORY_*, DURABLE*), WORK_MS. Prints "listening <url>".
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
      yield { type: "tool-call-start", id: "call_work", name: "work" };
      yield { type: "tool-call-end", id: "call_work", name: "work", arguments: JSON.stringify({ task: text }) };
      yield { type: "finish", reason: { unified: "tool-calls" }, usage };
      return;
    }
    const result = last?.role === "tool" && typeof last.content === "string" ? last.content : "?";
    yield { type: "text-start", id: "t" };
    for (const word of `Done: ${result}.`.split(/(?<= )/)) yield { type: "text-delta", id: "t", delta: word };
    yield { type: "text-end", id: "t" };
    yield { type: "finish", reason: { unified: "stop" }, usage };
  },
};

const work = defineTool<{ task: string }>({
  name: "work",
  description: "Works on a task",
  parameters: { type: "object", properties: { task: { type: "string" } }, required: ["task"] },
  idempotent: true,
  async execute({ task }) {
    await new Promise((resolve) => setTimeout(resolve, workMs));
    return `worked on ${task}`;
  },
});

const server = await startAgentServer({ host: "127.0.0.1", build: { model, tools: [work] }, log: (line) => process.stderr.write(`${line}\n`) });
await server.ready();
process.stdout.write(`listening ${server.url}\n`);

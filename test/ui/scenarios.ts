// The runs every UI protocol encoder is checked on (one shared suite, one conformance test per
// encoder): a wave of two calls and an answer, reasoning, an approval interrupt and its resume, a
// guardrail deny, a rejected approval, a step limit, a model failure, an abort and a sub-agent.
import { Agent, AgentLoopError, defineTool, type LoopEvent, type Model, type ModelEvent, type RunResult, ScriptedModel } from "../../src/index.js";
import { agentTool } from "../../src/agents/index.js";

export const echo = defineTool<{ text: string }>({
  name: "echo",
  description: "Echoes the text back",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: ({ text }) => `echo: ${text}`,
});
export const fails = defineTool<{ why: string }>({
  name: "fails",
  description: "Always fails",
  parameters: { type: "object", properties: { why: { type: "string" } }, required: ["why"] },
  execute: ({ why }) => {
    throw new Error(why);
  },
});
export const writeFile = defineTool<{ path: string }>({
  name: "write_file",
  description: "Writes a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  needsApproval: true,
  execute: ({ path }) => `wrote ${path}`,
});

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });

/** A model that thinks out loud before it answers (the scripted model has no reasoning). */
class ReasoningModel implements Model {
  readonly provider = "test";
  readonly modelId = "reasoner";
  async *stream(): AsyncIterable<ModelEvent> {
    yield { type: "reasoning-start", id: "r" };
    yield { type: "reasoning-delta", id: "r", delta: "The user greets; " };
    yield { type: "reasoning-delta", id: "r", delta: "greet back." };
    yield { type: "reasoning-end", id: "r" };
    yield { type: "text-start", id: "t" };
    yield { type: "text-delta", id: "t", delta: "Hello " };
    yield { type: "text-delta", id: "t", delta: "there." };
    yield { type: "text-end", id: "t" };
    yield { type: "finish", reason: { unified: "stop" } };
  }
}

/** A model whose provider fails. */
export class FailingModel implements Model {
  readonly provider = "test";
  readonly modelId = "failing";
  async *stream(): AsyncIterable<ModelEvent> {
    yield { type: "text-start", id: "t" };
    yield { type: "text-delta", id: "t", delta: "Partial" };
    yield { type: "error", error: new AgentLoopError("server", "the provider answered 500") };
  }
}

export interface RecordedRun {
  events: LoopEvent[];
  result: RunResult;
}

export async function record(run: ReturnType<Agent["run"]>, onEvent?: (event: LoopEvent, abort: () => void) => void): Promise<RecordedRun> {
  const events: LoopEvent[] = [];
  for await (const event of run) {
    events.push(event);
    onEvent?.(event, () => run.abort("client disconnected"));
  }
  return { events, result: await run };
}

export interface Scenario {
  name: string;
  /** The runs of the scenario: one, or a stopped run and its resume. */
  runs(): Promise<RecordedRun[]>;
}

export const scenarios: Scenario[] = [
  {
    name: "a wave of two calls (one fails) and a streamed answer",
    runs: async () => {
      const model = new ScriptedModel([calls(["call_a", "echo", { text: "hi" }], ["call_b", "fails", { why: "disk full" }]), "Echo said hi; the other failed."]);
      return [await record(new Agent({ name: "helper", model, tools: [echo, fails] }).run("echo hi and fail"))];
    },
  },
  {
    name: "reasoning before the answer",
    runs: async () => [await record(new Agent({ name: "thinker", model: new ReasoningModel() }).run("hello"))],
  },
  {
    name: "an approval interrupt, then the resume approving one call and rejecting the other",
    runs: async () => {
      const agent = new Agent({ name: "writer", model: new ScriptedModel([calls(["call_a", "write_file", { path: "a.txt" }], ["call_b", "write_file", { path: "b.txt" }]), "Wrote a.txt."]), tools: [writeFile] });
      const stopped = await record(agent.run("write a and b", { onApproval: "interrupt" }));
      const resumed = await record(agent.resume(stopped.result.checkpoint!, { decisions: { call_a: { approve: true }, call_b: { approve: false, reason: "not b" } }, onApproval: "interrupt" }));
      return [stopped, resumed];
    },
  },
  {
    name: "a guardrail denies a call",
    runs: async () => {
      const model = new ScriptedModel([calls(["call_a", "echo", { text: "x" }]), "The echo was denied."]);
      const agent = new Agent({ name: "guarded", model, tools: [echo], guardrails: { deniedTools: [{ tools: ["echo"], reason: "no echoes here" }] } });
      return [await record(agent.run("echo x"))];
    },
  },
  {
    name: "the step limit ends the run",
    runs: async () => {
      const model = new ScriptedModel([calls(["call_a", "echo", { text: "1" }]), calls(["call_b", "echo", { text: "2" }])]);
      return [await record(new Agent({ name: "limited", model, tools: [echo], maxTurns: 1 }).run("loop"))];
    },
  },
  {
    name: "the model fails",
    runs: async () => [await record(new Agent({ name: "broken", model: new FailingModel() }).run("hi"))],
  },
  {
    name: "the client goes away mid-answer",
    runs: async () => {
      const model = new ScriptedModel(["one two three four five six seven eight"], { chunkDelayMs: 5 });
      let aborted = false;
      return [
        await record(new Agent({ name: "slow", model }).run("count"), (event, abort) => {
          if (event.type === "text-delta" && !aborted) {
            aborted = true;
            abort();
          }
        }),
      ];
    },
  },
  {
    name: "a sub-agent runs inside a call",
    runs: async () => {
      const researcher = new Agent({ name: "researcher", description: "Finds things", model: new ScriptedModel([calls(["sub_1", "echo", { text: "deep" }]), "Found: deep."]), tools: [echo] });
      const model = new ScriptedModel([calls(["call_r", "researcher", { task: "find deep" }]), "The researcher found deep."]);
      return [await record(new Agent({ name: "lead", model, tools: [agentTool(researcher, { name: "researcher" })] }).run("research"))];
    },
  },
];

// The Agent's public face (src/loop/agent.ts) against the survivors of its first mutation run: every
// config check's error (which value, which message) and the values each check lets through, the
// model chosen (a fallback list, DEBUG_MOCK_RESPONSES, a durable model), the tools and toolsets
// checked when built and when a toolset changes, and `run`'s own checks of its input and runId.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, type AgentConfig, AgentLoopError, ApprovalBroker, type Instrumentation, type Model, type ModelRequest, STEP_LIMIT_FINISH, ScriptedModel, type Tool } from "../../src/index.js";
import type { Toolset } from "../../src/loop/types.js";
import { calls, eventsOf, ofType } from "./helpers.js";

const model = new ScriptedModel(["x"]);
/** An agent of `config` (values of any type: the checks are what is tested). */
const make = (config: Record<string, unknown>) => new Agent({ model, ...config } as AgentConfig);
/** The exact TypeError a bad config gets. */
const rejects = (config: Record<string, unknown>, message: string) => assert.throws(() => make(config), { name: "TypeError", message });

function echo(name: string): Tool {
  return { name, description: `echoes as ${name}`, parameters: { type: "object" }, execute: () => name };
}

/** A toolset whose tools the test replaces (each replacement bumps the version, as an MCP toolset does). */
class ListToolset implements Toolset {
  toolsVersion = 0;
  constructor(
    readonly name: string | undefined,
    public loadedTools: Tool[],
  ) {}
  set(tools: Tool[]): void {
    this.loadedTools = tools;
    this.toolsVersion++;
  }
}

test("every count of the config must be a positive integer: 1 is the least, and the error names the option and the value", () => {
  const keys = ["maxTurns", "maxToolRounds", "maxTokens", "maxToolCalls", "concurrency", "toolTimeoutMs", "maxDelegationDepth", "approvalTimeoutMs"] as const;
  for (const key of keys) {
    for (const [value, shown] of [
      [0, "0"],
      [-2, "-2"],
      [1.5, "1.5"],
      ["3", '"3"'],
      [null, "null"],
      [Number.NaN, "null"],
    ] as const) {
      rejects({ [key]: value }, `Agent config: ${key} must be a positive integer, got ${shown}`);
    }
    assert.equal(make({ [key]: 1 }).config[key], 1, `${key}: 1 is allowed`);
    assert.equal(make({ [key]: 7 }).config[key], 7);
  }
});

test("loopDetection and truncation: their counts are checked by name, their mode by value; false or absent is no check", () => {
  rejects({ loopDetection: { window: 0 } }, "Agent config: loopDetection.window must be a positive integer, got 0");
  rejects({ loopDetection: { maxWarnings: 2.5 } }, "Agent config: loopDetection.maxWarnings must be a positive integer, got 2.5");
  make({ loopDetection: { window: 1, maxWarnings: 1 } });
  make({ loopDetection: false });
  rejects({ truncation: { maxChars: 0 } }, "Agent config: truncation.maxChars must be a positive integer, got 0");
  rejects({ truncation: { maxLines: -1 } }, "Agent config: truncation.maxLines must be a positive integer, got -1");
  for (const mode of ["head", "", "HEAD_TAIL"]) {
    rejects({ truncation: { mode: mode as never } }, `Agent config: truncation.mode must be "head_tail" or "tail", got ${JSON.stringify(mode)}`);
  }
  for (const mode of ["head_tail", "tail", undefined] as const) make({ truncation: { maxChars: 1, maxLines: 1, mode } });
  make({});
});

test("toolCallMode, onLimit and onApproval accept exactly their documented values", () => {
  for (const mode of ["auto", "native", "string", "action", "plan", "fenced"] as const) assert.equal(make({ toolCallMode: mode }).config.toolCallMode, mode);
  for (const mode of ["json", ""]) {
    rejects({ toolCallMode: mode as never }, `Agent config: toolCallMode must be one of auto, native, string, action, plan, fenced, got ${JSON.stringify(mode)}`);
  }
  for (const onLimit of ["stop", "final-answer"] as const) make({ onLimit });
  for (const onLimit of ["retry", ""]) rejects({ onLimit: onLimit as never }, `Agent config: onLimit must be "stop" or "final-answer", got ${JSON.stringify(onLimit)}`);
  for (const onApproval of ["wait", "interrupt"] as const) make({ onApproval });
  for (const onApproval of ["ask", ""]) {
    rejects({ onApproval: onApproval as never }, `Agent config: onApproval must be "wait" or "interrupt", got ${JSON.stringify(onApproval)}`);
  }
});

test("needsApproval is a list of non-empty tool names or globs", () => {
  make({ needsApproval: [] });
  make({ needsApproval: ["write", "fs.*"] });
  for (const bad of ["write", ["write", ""], ["write", 3], [null]]) {
    rejects({ needsApproval: bad as never }, `Agent config: needsApproval must be a list of tool names or globs, got ${JSON.stringify(bad)}`);
  }
});

test("the model must implement Model; a list of models is a fallback chain, the first one answering first", async () => {
  for (const bad of [undefined, null, {}, { stream: "no" }]) {
    assert.throws(() => new Agent({ model: bad as never }), {
      name: "TypeError",
      message: "Agent config: model must implement Model (a stream(request) method); see agentloop/providers",
    });
  }
  const down: Model = {
    provider: "down",
    modelId: "d",
    async *stream() {
      yield { type: "error" as const, error: { kind: "server", message: "down", retryable: true } as never };
    },
  };
  const agent = new Agent({ model: [down, new ScriptedModel(["from the second"])] });
  assert.equal(agent.model.provider, "down", "the chain is named after its first model");
  const result = await agent.run("go");
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "from the second");
  // A list of one is that model.
  const only = new ScriptedModel(["only"]);
  assert.equal(new Agent({ model: [only] }).model, only);
});

test("DEBUG_MOCK_RESPONSES replaces the configured model, but not a durable one (which wraps the model already chosen)", async () => {
  const saved = process.env.DEBUG_MOCK_RESPONSES;
  process.env.DEBUG_MOCK_RESPONSES = JSON.stringify(["scripted answer"]);
  try {
    const real = new ScriptedModel(["real answer"]);
    const replaced = new Agent({ model: real });
    assert.notEqual(replaced.model, real);
    assert.equal((await replaced.run("go")).text, "scripted answer");
    const durable = Object.assign(new ScriptedModel(["durable answer"]), { durable: true });
    const kept = new Agent({ model: durable });
    assert.equal(kept.model, durable);
    assert.equal((await kept.run("go")).text, "durable answer");
    // An empty variable is no script.
    process.env.DEBUG_MOCK_RESPONSES = "";
    assert.equal(new Agent({ model: real }).model, real);
  } finally {
    if (saved === undefined) delete process.env.DEBUG_MOCK_RESPONSES;
    else process.env.DEBUG_MOCK_RESPONSES = saved;
  }
});

test("name and description default to \"agent\" and empty; sub-agents become delegate tools after the tools", () => {
  const plain = make({});
  assert.equal(plain.name, "agent");
  assert.equal(plain.description, "");
  const helper = new Agent({ model, name: "helper", description: "helps" });
  const lead = new Agent({ model, name: "lead", description: "leads", tools: [echo("a")], subAgents: [helper] });
  assert.equal(lead.name, "lead");
  assert.equal(lead.description, "leads");
  assert.deepEqual(
    lead.toolDefinitions().map((definition) => [definition.name, definition.description]),
    [
      ["a", "echoes as a"],
      ["delegate_to_helper", "helps"],
    ],
  );
  assert.deepEqual(
    lead.currentTools().map((tool) => tool.name),
    ["a", "delegate_to_helper"],
  );
});

test("every tool needs a string name and an execute function; the error shows the name it got", () => {
  const message = (got: string) =>
    `Agent config: every tool needs a name and an execute function, every toolset a numeric toolsVersion and a loadedTools array (got ${got})`;
  assert.throws(() => make({ tools: [null as never] }), { name: "TypeError", message: message("undefined") });
  assert.throws(() => make({ tools: [{ name: 5, execute: () => "" } as never] }), { name: "TypeError", message: message("5") });
  assert.throws(() => make({ tools: [{ name: "half", description: "" } as never] }), { name: "TypeError", message: message('"half"') });
  // A toolset's version must be a number and its tools an array.
  assert.throws(() => make({ tools: [{ name: "set", toolsVersion: "1", loadedTools: [] } as never] }), { name: "TypeError", message: message('"set"') });
  assert.throws(() => make({ tools: [{ name: "set", toolsVersion: 1, loadedTools: {} } as never] }), { name: "TypeError", message: message('"set"') });
  // An object with an execute function is a tool even with toolset fields.
  const both = { ...echo("both"), toolsVersion: 0, loadedTools: [] };
  assert.deepEqual(
    make({ tools: [both as never] }).currentTools().map((tool) => tool.name),
    ["both"],
  );
});

test("a toolset's bad tool is refused with the toolset's name (or \"unnamed\") when built and when it changes", () => {
  assert.throws(() => make({ tools: [new ListToolset(undefined, [{ name: "x" } as never])] }), {
    name: "TypeError",
    message: 'Agent config: every tool needs a name and an execute function (got "x" (from toolset "unnamed"))',
  });
  assert.throws(() => make({ tools: [new ListToolset("live", [null as never])] }), {
    name: "TypeError",
    message: 'Agent config: every tool needs a name and an execute function (got undefined (from toolset "live"))',
  });
  assert.throws(() => make({ tools: [new ListToolset("live", [{ name: 3, execute: () => "" } as never])] }), {
    message: 'Agent config: every tool needs a name and an execute function (got 3 (from toolset "live"))',
  });

  const live = new ListToolset("live", [echo("a")]);
  const agent = make({ tools: [echo("local"), live] });
  live.set([echo("a"), { name: "b" } as never]);
  const expected = { name: "AgentLoopError", kind: "configuration", message: 'agent "agent": every tool needs a name and an execute function (got "b" (from toolset "live"))' };
  assert.throws(() => agent.toolDefinitions(), expected);
  assert.throws(() => agent.currentTools(), expected);
  live.set([echo("local")]);
  assert.throws(() => agent.currentTools(), { kind: "configuration", message: 'agent "agent": two tools are named "local" (from toolset "live")' });
  assert.throws(() => agent.toolDefinitions(), { kind: "configuration" });
  // Fixed: the tools follow the toolset again.
  live.set([echo("c"), echo("d")]);
  assert.deepEqual(
    agent.currentTools().map((tool) => tool.name),
    ["local", "c", "d"],
  );
  assert.deepEqual(
    agent.toolDefinitions().map((definition) => definition.name),
    ["local", "c", "d"],
  );
});

test("after a toolset changed, the tools are taken in once: the definitions stay the same list until the next change", () => {
  const first = new ListToolset("first", [echo("a")]);
  const second = new ListToolset("second", [echo("b")]);
  const agent = make({ tools: [first, second] });
  const before = agent.toolDefinitions();
  assert.equal(agent.toolDefinitions(), before, "unchanged toolsets: the same definitions");
  second.set([echo("c")]);
  const after = agent.toolDefinitions();
  assert.notEqual(after, before);
  assert.deepEqual(
    after.map((definition) => definition.name),
    ["a", "c"],
  );
  assert.equal(agent.toolDefinitions(), after, "both toolsets' versions were recorded: nothing is taken in again");
  first.set([echo("a2")]);
  assert.deepEqual(
    agent.toolDefinitions().map((definition) => definition.name),
    ["a2", "c"],
  );
});

test("run checks its input and runId before anything starts", async () => {
  const agent = make({});
  for (const [input, shown] of [
    [undefined, "undefined"],
    [null, "null"],
    [42, "number"],
    [{ text: "hi" }, "object"],
  ] as const) {
    assert.throws(() => agent.run(input as never), {
      name: "TypeError",
      message: `agent.run: the input must be a string (the user's message), got ${shown}`,
    });
  }
  for (const [runId, shown] of [
    ["", '""'],
    [7, "7"],
    [null, "null"],
  ] as const) {
    assert.throws(() => agent.run("go", { runId: runId as never }), { name: "TypeError", message: `agent.run: options.runId must be a non-empty string, got ${shown}` });
  }
  const run = agent.run("go", { runId: "mine" });
  assert.equal(run.id, "mine");
  assert.equal((await run).runId, "mine");
  const generated = agent.run("go");
  assert.match(generated.id, /^run_[0-9a-f-]{36}$/);
  assert.equal((await generated).state, "COMPLETED");
});

test("a fallback chain's hand-over is a model-fallback event of its turn, and the model call's instrumentation sees it; a single model is told of none", async () => {
  const down: Model = {
    provider: "down",
    modelId: "d1",
    async *stream() {
      yield { type: "error" as const, error: new AgentLoopError("server", "503 from down") };
    },
  };
  const backup = new ScriptedModel([calls(["echo", {}, "c1"]), "answered"]);
  const seen: unknown[] = [];
  const instrumentation: Instrumentation = {
    run: (_info, fn) => fn(),
    toolCall: (_info, fn) => fn(),
    async modelCall(_info, fn) {
      const response = await fn();
      seen.push(response.fallbacks?.map((fallback) => `${fallback.from}>${fallback.to}`));
      return response;
    },
  };
  const run = new Agent({ model: [down, backup], tools: [echo("echo")], instrumentation }).run("go");
  const events = await eventsOf(run);
  assert.equal((await run).text, "answered");
  const to = `${backup.provider}:${backup.modelId}`;
  assert.deepEqual(
    ofType(events, "model-fallback").map(({ turn, from, to, reason, errorKind }) => ({ turn, from, to, reason, errorKind })),
    [1, 2].map((turn) => ({ turn, from: "down:d1", to, reason: "503 from down", errorKind: "server" })),
  );
  assert.deepEqual(seen, [[`down:d1>${to}`], [`down:d1>${to}`]]);

  const single = new ScriptedModel(["hi"]);
  await new Agent({ model: single }).run("go");
  assert.equal(single.requests[0]!.onFallback, undefined);
});

test("what a run hands its instrumentation, observers, memory and tools: ids, depth, path, services, inputs, defaults when not given", async () => {
  const record: Record<string, unknown[]> = { run: [], model: [], tool: [], observer: [], memory: [], loads: [] };
  const instrumentation: Instrumentation = {
    run(info, fn) {
      const { model: _model, ...rest } = info;
      record.run!.push(rest);
      return fn();
    },
    modelCall(info, fn) {
      record.model!.push([info.turn, info.toolNames, info.depth]);
      return fn();
    },
    toolCall: (_info, fn) => fn(),
  };
  const probe: Tool = {
    name: "probe",
    description: "",
    parameters: { type: "object" },
    execute: (_args, context) => {
      record.tool!.push({ depth: context.depth, agentPath: context.agentPath, services: context.services, inputs: context.inputs, step: context.step });
      return "probed";
    },
  };
  const memory = {
    loadHistory: async (sessionId: string) => {
      record.loads!.push(sessionId);
      return [{ role: "user" as const, content: "earlier" }];
    },
    onEvent: (event: { type: string }) => {
      record.memory!.push(event.type);
    },
  };
  const observer = {
    onEvent: (event: { type: string }, info: { depth: number; sessionId?: string }) => {
      record.observer!.push([event.type, info.depth, info.sessionId]);
    },
  };
  const model = new ScriptedModel([calls(["probe", {}, "c1"]), "done", calls(["probe", {}, "c2"]), "done again"]);
  const agent = new Agent({ name: "worker", model, tools: [probe], instrumentation, observers: [observer], memory });

  const nested = agent.run("go", {
    runId: "r1",
    sessionId: "s1",
    depth: 2,
    agentPath: ["root"],
    parentRunId: "p1",
    parentToolCallId: "t9",
    services: { trace: "x" },
    inputs: { city: "Oslo" },
  });
  const events = await eventsOf(nested);
  const result = await nested;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(record.loads, ["s1"]);
  assert.equal(result.messages[0]!.role === "user" && result.messages[0]!.content, "earlier", "the session's history comes first");
  assert.deepEqual(result.newMessages[0], { role: "user", content: "go" });
  assert.deepEqual(ofType(events, "run-start")[0], {
    type: "run-start",
    runId: "r1",
    agent: "worker",
    model: `${model.provider}:${model.modelId}`,
    input: "go",
    sessionId: "s1",
    timestamp: ofType(events, "run-start")[0]!.timestamp,
  });
  assert.deepEqual(record.run, [{ runId: "r1", agentName: "worker", sessionId: "s1", depth: 2, parentRunId: "p1", parentToolCallId: "t9", input: "go" }]);
  assert.deepEqual(record.model, [
    [1, ["probe"], 2],
    [2, ["probe"], 2],
  ]);
  assert.deepEqual(record.tool, [{ depth: 2, agentPath: ["root", "worker"], services: { trace: "x" }, inputs: { city: "Oslo" }, step: 1 }]);
  assert.deepEqual(record.memory, record.observer!.map((entry) => (entry as unknown[])[0]), "memory observes the run with a session");
  assert.deepEqual(record.observer![0], ["run-start", 2, "s1"]);

  // No session: memory neither loads nor observes; the defaults.
  for (const key of Object.keys(record)) record[key] = [];
  const top = await agent.run("go again");
  assert.equal(top.state, "COMPLETED");
  assert.deepEqual(record.loads, []);
  assert.deepEqual(record.memory, []);
  assert.ok(record.observer!.length > 0);
  assert.deepEqual(record.run, [{ runId: top.runId, agentName: "worker", sessionId: undefined, depth: 0, parentRunId: undefined, parentToolCallId: undefined, input: "go again" }]);
  assert.deepEqual(record.tool, [{ depth: 0, agentPath: ["worker"], services: {}, inputs: {}, step: 1 }]);
});

test("a loop that throws ends FAILED with \"internal error: …\", a fatal error event and the transcript so far; a wrapper failing before the loop gives an empty result", async () => {
  const instrumentation = (where: "model" | "run"): Instrumentation => ({
    run: async (_info, fn) => {
      if (where === "run") throw new Error("tracer down");
      return fn();
    },
    modelCall: async (_info, fn) => {
      if (where === "model") throw new Error("exporter broke");
      return fn();
    },
    toolCall: (_info, fn) => fn(),
  });
  const inside = new Agent({ model: new ScriptedModel(["never"]), instrumentation: instrumentation("model") }).run("go");
  const events = await eventsOf(inside);
  const failed = await inside;
  assert.equal(failed.state, "FAILED");
  assert.equal(failed.reason, "internal error: exporter broke");
  assert.equal(failed.error?.message, "exporter broke");
  assert.deepEqual(failed.messages, [{ role: "user", content: "go" }]);
  assert.equal(failed.turns, 1);
  const errors = ofType(events, "error");
  assert.equal(errors.length, 1);
  assert.equal(errors[0]!.fatal, true);
  assert.equal(errors[0]!.error, failed.error);
  assert.deepEqual(
    events.slice(-2).map((event) => event.type),
    ["error", "run-end"],
  );

  const before = new Agent({ model: new ScriptedModel(["never"]), instrumentation: instrumentation("run") }).run("go", { runId: "r-before" });
  const result = await before;
  const { error, ...rest } = result;
  assert.equal(error?.message, "tracer down");
  assert.deepEqual(rest, {
    runId: "r-before",
    state: "FAILED",
    reason: "internal error: tracer down",
    text: "",
    messages: [],
    newMessages: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, reasoningTokens: 0, cachedInputTokens: 0 },
    turns: 0,
    toolRounds: 0,
    toolCalls: 0,
  });
});

/** A model answering each call from `answers` in order: text (with a raw finish reason) or tool calls, each costing `tokens`. */
function answering(answers: Array<{ text?: string; raw?: string; calls?: Array<[string, string]> }>, tokens = 10): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    provider: "test",
    modelId: "answering",
    requests,
    async *stream(request: ModelRequest) {
      const answer = answers[requests.length] ?? { text: "out of answers" };
      requests.push(request);
      if (answer.text !== undefined) {
        yield { type: "text-start" as const, id: "t" };
        yield { type: "text-delta" as const, id: "t", delta: answer.text };
        yield { type: "text-end" as const, id: "t" };
      }
      for (const [id, name] of answer.calls ?? []) yield { type: "tool-call-end" as const, id, name, arguments: "{}" };
      const usage = { inputTokens: tokens, outputTokens: 0, totalTokens: tokens };
      yield { type: "finish" as const, reason: { unified: answer.calls ? ("tool-calls" as const) : ("stop" as const), raw: answer.raw }, usage };
    },
  };
}

test("a text protocol's step-limit answer ends the input TURN_LIMIT: its own text as the reason, or a plain one", async () => {
  for (const text of ["Reached maximum reasoning steps (3)", "Reached maximum reasoning steps (12)"]) {
    const exact = await new Agent({ model: answering([{ text, raw: STEP_LIMIT_FINISH }]) }).run("go");
    assert.deepEqual([exact.state, exact.reason, exact.text], ["TURN_LIMIT", text, text]);
  }
  for (const text of ["Here is what I found", "Reached maximum reasoning steps (3) and more", "so: Reached maximum reasoning steps (3)", "Reached maximum reasoning steps ()", "Reached maximum reasoning steps (x)", "Reached maximum reasoning steps 3"]) {
    const result = await new Agent({ model: answering([{ text, raw: STEP_LIMIT_FINISH }]) }).run("go");
    assert.equal(result.state, "TURN_LIMIT");
    assert.equal(result.reason, "the tool-call protocol's steps ran out; final answer given without tools");
    assert.equal(result.text, text);
  }
  const other = await new Agent({ model: answering([{ text: "Reached maximum reasoning steps (3)", raw: "stop" }]) }).run("go");
  assert.deepEqual([other.state, other.reason], ["COMPLETED", "the model answered"]);
});

test("the budgets' edges: exactly maxToolCalls calls and exactly maxToolRounds rounds run; the token budget stops at exactly maxTokens", async () => {
  const echoTool = echo("echo");
  const twoWaves = () =>
    answering([
      { calls: [["c1", "echo"], ["c2", "echo"]] },
      { calls: [["c3", "echo"], ["c4", "echo"]] },
      { text: "done" },
    ]);
  const calls4 = await new Agent({ model: twoWaves(), tools: [echoTool], maxToolCalls: 4 }).run("go");
  assert.deepEqual([calls4.state, calls4.toolCalls], ["COMPLETED", 4]);
  const calls3 = await new Agent({ model: twoWaves(), tools: [echoTool], maxToolCalls: 3 }).run("go");
  assert.deepEqual([calls3.state, calls3.toolCalls, calls3.toolRounds], ["TOOL_BUDGET", 2, 1]);
  assert.deepEqual(
    calls3.messages.slice(-2).map((message) => message.role === "tool" && [message.toolCallId, message.content]),
    [
      ["c3", "Cancelled: the tool-call budget would be exceeded"],
      ["c4", "Cancelled: the tool-call budget would be exceeded"],
    ],
  );
  const rounds2 = await new Agent({ model: twoWaves(), tools: [echoTool], maxToolRounds: 2 }).run("go");
  assert.deepEqual([rounds2.state, rounds2.toolRounds, rounds2.text], ["COMPLETED", 2, "done"]);

  // Each call costs 10 tokens: a budget of 20 allows two calls, 21 three.
  const wave = () => answering([{ calls: [["c1", "echo"]] }, { calls: [["c2", "echo"]] }, { calls: [["c3", "echo"]] }, { text: "done" }]);
  const at20 = await new Agent({ model: wave(), tools: [echoTool], maxTokens: 20 }).run("go");
  assert.deepEqual([at20.state, at20.turns, at20.reason], ["TOKEN_BUDGET", 2, "token budget (20) used: 20 tokens"]);
  const at21 = await new Agent({ model: wave(), tools: [echoTool], maxTokens: 21 }).run("go");
  assert.deepEqual([at21.state, at21.turns], ["TOKEN_BUDGET", 3]);
});

test("how a run waits for approval: the run's onApproval and approvalTimeoutMs, else its parent's approvals, else the agent's, else wait", async () => {
  const write = (): Tool => ({ name: "write", description: "", parameters: { type: "object" }, needsApproval: true, execute: () => "written" });
  const script = () => new ScriptedModel([calls(["write", {}, "w1"]), "after"]);
  const rejectedWith = (result: { messages: Array<{ role: string; content?: unknown }> }) => result.messages.find((message) => message.role === "tool")?.content;

  const interrupting = new Agent({ model: script(), tools: [write()], onApproval: "interrupt", approvalTimeoutMs: 60_000 });
  const waited = await interrupting.run("go", { onApproval: "wait", approvalTimeoutMs: 1 });
  assert.equal(waited.state, "COMPLETED");
  assert.equal(rejectedWith(waited), "Rejected: approval timed out after 1 ms");
  assert.equal((await new Agent({ model: script(), tools: [write()], onApproval: "interrupt" }).run("go")).state, "INTERRUPTED");

  // A parent's approvals (a sub-agent's run): their mode and timeout, unless the run names its own.
  const broker = new ApprovalBroker();
  const fromParent = await interrupting.run("go", { approvals: { broker, mode: "wait", timeoutMs: 2 } });
  assert.equal(rejectedWith(fromParent), "Rejected: approval timed out after 2 ms");
  const own = await interrupting.run("go", { approvals: { broker, mode: "wait", timeoutMs: 2 }, onApproval: "interrupt" });
  assert.equal(own.state, "INTERRUPTED");
  const ownTimeout = await interrupting.run("go", { approvals: { broker, mode: "wait", timeoutMs: 60_000 }, approvalTimeoutMs: 3 });
  assert.equal(rejectedWith(ownTimeout), "Rejected: approval timed out after 3 ms");

  // The agent's timeout when the run names none; no mode anywhere: wait.
  const agentTimeout = await new Agent({ model: script(), tools: [write()], approvalTimeoutMs: 4 }).run("go");
  assert.deepEqual([agentTimeout.state, rejectedWith(agentTimeout)], ["COMPLETED", "Rejected: approval timed out after 4 ms"]);
});

test("tool calls in a limit's final answer or in a corrected structured answer get cancelled results; the answer's text stands", async () => {
  const echoTool = echo("echo");
  const limited = answering([{ calls: [["c1", "echo"]] }, { text: "best I have", calls: [["c2", "echo"]] }]);
  const result = await new Agent({ model: limited, tools: [echoTool], maxTurns: 1, onLimit: "final-answer" }).run("go");
  assert.equal(result.state, "TURN_LIMIT");
  assert.equal(result.reason, "maxTurns (1) reached; final answer given without tools");
  assert.equal(limited.requests[1]!.toolChoice, "none");
  const last = result.messages.at(-1)!;
  assert.deepEqual(last.role === "tool" && [last.toolCallId, last.content, last.isError], ["c2", "Cancelled: tools are disabled for the final answer", true]);
  assert.equal(result.toolCalls, 1, "the final answer's call is not counted");

  const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"] };
  const reasked = answering([{ text: "not json" }, { text: '{"n":1}', calls: [["c9", "echo"]] }]);
  const structured = await new Agent({ model: reasked, tools: [echoTool], output: schema }).run("go");
  assert.equal(structured.state, "COMPLETED");
  assert.deepEqual(structured.output, { n: 1 });
  assert.equal(reasked.requests[1]!.toolChoice, "none");
  const cancelled = structured.messages.at(-1)!;
  assert.deepEqual(cancelled.role === "tool" && [cancelled.toolCallId, cancelled.content], ["c9", "Cancelled: tools are disabled for the corrected answer"]);
});

test("resume: no options is a ResumeError naming the decisions; the resumed run's id, session and inputs; a wrapper failing before its loop gives a FAILED result", async () => {
  const pay: Tool = { name: "pay", description: "", parameters: { type: "object" }, needsApproval: true, execute: (_args, context) => `paid for ${String(context.inputs.order)}` };
  let failResume = false;
  const instrumentation: Instrumentation = {
    run: async (info, fn) => {
      if (failResume && info.input === "") throw new Error("tracer down");
      return fn();
    },
    modelCall: (_info, fn) => fn(),
    toolCall: (_info, fn) => fn(),
  };
  const agent = new Agent({ model: new ScriptedModel([calls(["pay", {}, "p1"]), "paid"]), tools: [pay], onApproval: "interrupt", instrumentation });
  const stopped = async () => {
    const first = await agent.run("go", { sessionId: "s-1", inputs: { order: "o-7" }, runId: "first" });
    assert.equal(first.state, "INTERRUPTED");
    return first.checkpoint!;
  };

  const checkpoint = await stopped();
  assert.throws(() => agent.resume(checkpoint, undefined as never), {
    name: "ResumeError",
    message: "agent.resume: decisions must be an object { [toolCallId]: { approve: true } | { approve: false, reason? } }",
  });

  const approved = await stopped();
  const resumed = agent.resume(approved, { decisions: { p1: { approve: true } } });
  assert.match(resumed.id, /^run_[0-9a-f-]{36}$/);
  const starts = ofType(await eventsOf(resumed), "run-start");
  assert.equal(starts[0]!.sessionId, "s-1", "the checkpoint's session");
  assert.deepEqual([starts[0]!.agent, starts[0]!.model, starts[0]!.input], ["agent", "scripted:scripted", ""]);
  assert.deepEqual(starts[0]!.resumedFrom, { checkpointId: approved.id, decisions: { p1: { approve: true } } });
  const result = await resumed;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.runId, resumed.id);
  const paid = result.messages.find((message) => message.role === "tool");
  assert.equal(paid?.content, "paid for o-7", "the checkpoint's inputs");

  const named = agent.resume(await stopped(), { decisions: { p1: { approve: true } }, runId: "second", sessionId: "s-2" });
  assert.equal(named.id, "second");
  assert.equal(ofType(await eventsOf(named), "run-start")[0]!.sessionId, "s-2");

  failResume = true;
  const failing = agent.resume(await stopped(), { decisions: { p1: { approve: true } }, runId: "third" });
  const failed = await failing;
  assert.deepEqual([failed.runId, failed.state, failed.reason, failed.messages], ["third", "FAILED", "internal error: tracer down", []]);
  assert.equal(failing.state, "FAILED");
});

test("each run streams from the model's per-run copy (forRun), natively and inside a text protocol", async () => {
  for (const toolCallMode of ["native", "string", "auto"] as const) {
    const streamedBy: string[] = [];
    let copies = 0;
    const make = (name: string): Model => ({
      provider: "p",
      modelId: "m",
      forRun: () => make(`copy ${++copies}`),
      stream(request) {
        streamedBy.push(name);
        return new ScriptedModel([`answer of ${name}`]).stream(request);
      },
    });
    const agent = new Agent({ model: make("original"), toolCallMode });
    assert.equal((await agent.run("one")).text, "answer of copy 1", toolCallMode);
    assert.equal((await agent.run("two")).text, "answer of copy 2", toolCallMode);
    assert.deepEqual(streamedBy, ["copy 1", "copy 2"], toolCallMode);
  }
});

test("a run, first or resumed, is RUNNING while its loop goes on, then in its end state", async () => {
  const states: string[] = [];
  let run: { state: string } | undefined;
  const noting = (answer: string) => () => {
    states.push(run!.state);
    return answer;
  };
  const look: Tool = { name: "look", description: "", parameters: { type: "object" }, execute: noting("looked") };
  const pay: Tool = { name: "pay", description: "", parameters: { type: "object" }, needsApproval: true, execute: noting("paid") };
  const agent = new Agent({ model: new ScriptedModel([calls(["look", {}, "l1"]), calls(["pay", {}, "p1"]), "done"]), tools: [look, pay], onApproval: "interrupt" });
  const first = agent.run("go");
  run = first;
  const stopped = await first;
  assert.equal(first.state, "INTERRUPTED");
  const resumed = agent.resume(stopped.checkpoint!, { decisions: { p1: { approve: true } } });
  run = resumed;
  assert.equal((await resumed).state, "COMPLETED");
  assert.equal(resumed.state, "COMPLETED");
  assert.deepEqual(states, ["RUNNING", "RUNNING"]);
});

test("a follow-up waits for a completed input: after an input that ended otherwise it is not taken", async () => {
  const model = new ScriptedModel([calls(["echo", {}, "c1"]), "second answer"]);
  const run = new Agent({ model, tools: [echo("echo")], maxTurns: 1 }).run("first");
  run.followUp("second");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "TURN_LIMIT");
  assert.deepEqual(
    ofType(events, "user-message").map((event) => [event.content, event.followUp]),
    [["first", false]],
  );
  assert.equal(model.requests.length, 1);
});

test("fenced mode, like action and plan, counts maxTurns as its steps and gets one more call for its answer", async () => {
  const fencedCall = `\`\`\`tool_call\n${JSON.stringify({ tool: "echo", arguments: {} })}\n\`\`\``;
  const model = new ScriptedModel([fencedCall, fencedCall, fencedCall, fencedCall]);
  const result = await new Agent({ model, tools: [echo("echo")], toolCallMode: "fenced", maxTurns: 2, loopDetection: false }).run("go");
  assert.equal(result.state, "TURN_LIMIT");
  assert.equal(result.text, "Reached maximum reasoning steps (2)");
  assert.equal(result.reason, "Reached maximum reasoning steps (2)");
  assert.equal(result.turns, 3);
  assert.equal(result.toolRounds, 2);
});

test("aborted as it stops for approvals: ABORTED, no checkpoint, the calls cancelled with the abort's reason", async () => {
  const pay: Tool = { name: "pay", description: "", parameters: { type: "object" }, needsApproval: true, execute: () => "paid" };
  const agent = new Agent({ model: new ScriptedModel([calls(["pay", {}, "p1"]), "never"]), tools: [pay], onApproval: "interrupt" });
  const run = agent.run("go", { onEvent: (event) => event.type === "approval-request" && run.abort("changed my mind") });
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: changed my mind");
  assert.equal(result.checkpoint, undefined);
  const last = result.messages.at(-1)!;
  assert.deepEqual(last.role === "tool" && [last.toolCallId, last.content], ["p1", "Cancelled: changed my mind"]);
});

test("aborted during a wave: the run ends after the wave, with no loop warning and no steering taken in", async () => {
  let run: ReturnType<Agent["run"]> | undefined;
  let waits = 0;
  const wait: Tool = {
    name: "wait",
    description: "",
    parameters: { type: "object" },
    execute: () => {
      if (++waits === 2) {
        run!.steer("and then this");
        run!.abort("enough");
      }
      return "waited";
    },
  };
  // The second identical call completes a loop pattern in a window of 2.
  const model = new ScriptedModel([calls(["wait", {}]), calls(["wait", {}]), "never"]);
  run = new Agent({ model, tools: [wait], loopDetection: { window: 2 } }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: enough");
  assert.equal(waits, 2);
  assert.deepEqual(ofType(events, "steering"), []);
  assert.deepEqual(ofType(events, "loop-warning"), []);
  assert.equal(result.messages.at(-1)!.role, "tool");
  // Not aborted, the same calls warn of the loop.
  waits = -10;
  run = new Agent({ model: new ScriptedModel([calls(["wait", {}]), calls(["wait", {}]), "done"]), tools: [wait], loopDetection: { window: 2 } }).run("go");
  assert.equal(ofType(await eventsOf(run), "loop-warning").length, 1);
});

test("only a context-length error before any output is retried with less history: not another error, not one after text", async () => {
  const long = (label: string) => `${label} ${"word ".repeat(400)}`;
  const history = [
    { role: "user" as const, content: long("first question") },
    { role: "assistant" as const, content: [{ type: "text" as const, text: long("first answer") }] },
    { role: "user" as const, content: long("second question") },
    { role: "assistant" as const, content: [{ type: "text" as const, text: long("second answer") }] },
  ];
  const failing = (kind: string, text?: string) => {
    const requests: ModelRequest[] = [];
    const model: Model = {
      provider: "test",
      modelId: "failing",
      async *stream(request: ModelRequest) {
        requests.push(request);
        if (text !== undefined) {
          yield { type: "text-start" as const, id: "t" };
          yield { type: "text-delta" as const, id: "t", delta: text };
        }
        yield { type: "error" as const, error: new AgentLoopError(kind as never, `${kind} failure`) };
      },
    };
    return { model, requests };
  };
  for (const [kind, text] of [
    ["server", undefined],
    ["context_length", "partial answer"],
  ] as const) {
    const { model, requests } = failing(kind, text);
    const run = new Agent({ model }).run("now", { history });
    const events = await eventsOf(run);
    const result = await run;
    assert.equal(result.state, "FAILED", kind);
    assert.equal(result.error?.kind, kind);
    assert.equal(requests.length, 1, `${kind}: no retry`);
    assert.deepEqual(ofType(events, "context-trimmed"), []);
  }
  // The same history and a context-length error before any output: one retry, trimmed.
  const { model, requests } = failing("context_length");
  await new Agent({ model }).run("now", { history });
  assert.equal(requests.length, 2);
  assert.ok(requests[1]!.messages.length < requests[0]!.messages.length);
});

test("empty text and reasoning parts are dropped from the transcript, unless they carry provider data; an answer of nothing adds no message", async () => {
  const model: Model = {
    provider: "test",
    modelId: "empty-parts",
    async *stream() {
      yield { type: "reasoning-start" as const, id: "r" };
      yield { type: "reasoning-end" as const, id: "r", providerData: { signature: "sig" } };
      yield { type: "text-start" as const, id: "empty" };
      yield { type: "text-end" as const, id: "empty" };
      yield { type: "text-start" as const, id: "t" };
      yield { type: "text-delta" as const, id: "t", delta: "hello" };
      yield { type: "text-end" as const, id: "t" };
      yield { type: "reasoning-start" as const, id: "r2" };
      yield { type: "reasoning-end" as const, id: "r2" };
      yield { type: "finish" as const, reason: { unified: "stop" as const } };
    },
  };
  const result = await new Agent({ model }).run("go");
  const answer = result.messages.at(-1)!;
  assert.equal(answer.role, "assistant");
  assert.deepEqual(
    answer.role === "assistant" && answer.content.map((part) => [part.type, "text" in part ? part.text : undefined, part.providerData]),
    [
      ["reasoning", "", { signature: "sig" }],
      ["text", "hello", undefined],
    ],
  );

  const silent: Model = {
    provider: "test",
    modelId: "silent",
    async *stream() {
      yield { type: "text-start" as const, id: "t" };
      yield { type: "text-end" as const, id: "t" };
      yield { type: "finish" as const, reason: { unified: "stop" as const } };
    },
  };
  const nothing = await new Agent({ model: silent }).run("go");
  assert.equal(nothing.state, "COMPLETED");
  assert.deepEqual(nothing.messages, [{ role: "user", content: "go" }]);
  assert.equal(nothing.text, "");
});

test("an MCP tool answers to its other names (`<server>.<tool>`, `<tool>`) when exactly one tool has that name; a listed name wins", async () => {
  const mcpTool = (name: string, server: string, tool: string): Tool => ({ name, description: "", parameters: { type: "object" }, mcp: { server, tool }, execute: () => `ran ${name}` });
  const plain = echo("search");
  const tools = [mcpTool("fs_read", "fs", "read"), mcpTool("db_read", "db", "read"), mcpTool("web_search", "web", "search"), mcpTool("git_log", "git", "log"), plain];
  const model = new ScriptedModel([calls(["fs.read", {}, "c1"], ["read", {}, "c2"], ["search", {}, "c3"], ["web.search", {}, "c4"], ["log", {}, "c5"], ["git_log", {}, "c6"]), "done"]);
  const result = await new Agent({ model, tools }).run("go");
  const results = result.messages.filter((message) => message.role === "tool").map((message) => [message.toolCallId, message.toolName, message.content]);
  assert.deepEqual(results, [
    ["c1", "fs_read", "ran fs_read"],
    ["c2", "read", "Unknown tool: read. Available tools: fs_read, db_read, web_search, git_log, search"],
    ["c3", "search", "search"],
    ["c4", "web_search", "ran web_search"],
    ["c5", "git_log", "ran git_log"],
    ["c6", "git_log", "ran git_log"],
  ]);
});

test("an output guardrail's deny drops only the answer's text: its reasoning stays in the transcript; the event says not allowed", async () => {
  const model: Model = {
    provider: "test",
    modelId: "reasoning",
    async *stream() {
      yield { type: "reasoning-start" as const, id: "r" };
      yield { type: "reasoning-delta" as const, id: "r", delta: "thinking it over" };
      yield { type: "reasoning-end" as const, id: "r" };
      yield { type: "text-start" as const, id: "t" };
      yield { type: "text-delta" as const, id: "t", delta: "the code is 1234" };
      yield { type: "text-end" as const, id: "t" };
      yield { type: "finish" as const, reason: { unified: "stop" as const } };
    },
  };
  const run = new Agent({ model, guardrails: { output: () => ({ allow: false, reason: "leaks a code" }) } }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "GUARDRAIL");
  const last = result.messages.at(-1)!;
  assert.deepEqual(last.role === "assistant" && last.content.map((part) => [part.type, "text" in part ? part.text : undefined]), [["reasoning", "thinking it over"]]);
  assert.deepEqual(
    ofType(events, "guardrail").map((event) => [event.guardrail, event.allowed, event.reason]),
    [["output", false, "leaks a code"]],
  );
});

test("a model error of kind aborted ends the run ABORTED with its message, with no error event, though the run itself was not aborted", async () => {
  const model: Model = {
    provider: "test",
    modelId: "cut",
    async *stream() {
      yield { type: "error" as const, error: new AgentLoopError("aborted", "the provider cut the stream") };
    },
  };
  const run = new Agent({ model }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: the provider cut the stream");
  assert.equal(result.error, undefined);
  assert.deepEqual(ofType(events, "error"), []);
});

test("a limit's final answer: asked as a user message; a model error there fails the run; a toolset gone bad before it fails the run without the call", async () => {
  const echoTool = echo("echo");
  const asked = answering([{ calls: [["c1", "echo"]] }, { text: "best" }]);
  await new Agent({ model: asked, tools: [echoTool], maxTurns: 1, onLimit: "final-answer" }).run("go");
  const request = asked.requests[1]!.messages.at(-1)!;
  assert.equal(request.role, "user");
  assert.equal(request.content, "[agentloop] The run reached a limit (maxTurns (1) reached). Do not call tools; answer now with what you have.");

  let call = 0;
  const failingSecond: Model = {
    provider: "test",
    modelId: "second-fails",
    async *stream(request) {
      if (++call === 1) return yield* new ScriptedModel([calls(["echo", {}, "c1"])]).stream(request);
      yield { type: "error" as const, error: new AgentLoopError("server", "down for the final answer") };
    },
  };
  const failed = await new Agent({ model: failingSecond, tools: [echoTool], maxTurns: 1, onLimit: "final-answer" }).run("go");
  assert.deepEqual([failed.state, failed.error?.kind, failed.reason], ["FAILED", "server", "model error (server): down for the final answer"]);

  const live = new ListToolset("live", [echo("a")]);
  const breaking: Tool = {
    name: "break",
    description: "",
    parameters: { type: "object" },
    execute: () => {
      live.set([echo("break")]);
      return "broken";
    },
  };
  const model = new ScriptedModel([calls(["break", {}, "b1"]), "never asked"]);
  const broken = await new Agent({ model, tools: [breaking, live], maxTurns: 1, onLimit: "final-answer" }).run("go");
  assert.equal(broken.state, "FAILED");
  assert.equal(broken.error?.kind, "configuration");
  assert.match(broken.reason, /two tools are named "break" \(from toolset "live"\)/);
  assert.equal(model.requests.length, 1, "no final-answer call");
});

test("structured output: aborted after an answer, an invalid one is not asked again and a valid one stands; a failing re-ask fails with its error; a second invalid answer is a fatal, non-retryable error", async () => {
  const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"] };
  for (const [answer, state] of [
    ["not json", "ABORTED"],
    ['{"n":2}', "COMPLETED"],
  ] as const) {
    const model = new ScriptedModel([answer, '{"n":3}']);
    const run = new Agent({ model, output: schema }).run("go", { onEvent: (event) => event.type === "turn-end" && run.abort("stop") });
    const result = await run;
    assert.equal(result.state, state, answer);
    assert.equal(model.requests.length, 1, answer);
    assert.equal(result.turns, 1);
    if (state === "COMPLETED") assert.deepEqual(result.output, { n: 2 });
    else assert.equal(result.reason, "aborted: stop");
  }

  const reaskFails = answering([{ text: "not json" }]);
  let calls2 = 0;
  const failing: Model = {
    provider: "test",
    modelId: "reask-fails",
    stream(request) {
      if (++calls2 === 1) return reaskFails.stream(request);
      return (async function* () {
        yield { type: "error" as const, error: new AgentLoopError("rate_limit", "slow down") };
      })();
    },
  };
  const failed = await new Agent({ model: failing, output: schema }).run("go");
  assert.deepEqual([failed.state, failed.error?.kind], ["FAILED", "rate_limit"]);

  const run = new Agent({ model: new ScriptedModel(["nope", "still nope"]), output: schema }).run("go");
  const events = await eventsOf(run);
  const invalid = await run;
  assert.equal(invalid.error?.kind, "output_validation");
  assert.equal(Object.hasOwn(invalid, "output"), false, "a result without an output has no output key");
  assert.equal(invalid.error?.retryable, false);
  assert.deepEqual(
    ofType(events, "error").map((event) => [event.error.kind, event.fatal]),
    [["output_validation", true]],
  );
});

test("loopDetection false: a full default window of the same call warns of nothing", async () => {
  const same = Array.from({ length: 10 }, () => calls(["echo", {}]));
  const off = new Agent({ model: new ScriptedModel([...same, "done"]), tools: [echo("echo")], maxTurns: 11, loopDetection: false }).run("go");
  const events = await eventsOf(off);
  assert.equal((await off).state, "COMPLETED");
  assert.deepEqual(ofType(events, "loop-warning"), []);
  const on = new Agent({ model: new ScriptedModel([...same, "done"]), tools: [echo("echo")], maxTurns: 11 }).run("go");
  assert.equal(ofType(await eventsOf(on), "loop-warning").length, 1);
});

test("loop detection keeps the last window of calls when it trims its record: a pattern right after the trim is caught", async () => {
  const tools = ["a", "b", "c"].map((name) => echo(name));
  const model = new ScriptedModel([calls(["a", {}]), calls(["b", {}]), calls(["c", {}]), calls(["c", {}]), "done"]);
  const run = new Agent({ model, tools, loopDetection: { window: 2 } }).run("go");
  const warnings = ofType(await eventsOf(run), "loop-warning");
  assert.deepEqual(
    warnings.map((warning) => warning.pattern),
    [["c"]],
  );
});

test("maxDelegationDepth reaches the sub-agents' delegate tools: a delegation past it is refused", async () => {
  const helper = new Agent({ name: "helper", model: new ScriptedModel(["helped"]) });
  const lead = (maxDelegationDepth?: number) =>
    new Agent({ name: "lead", model: new ScriptedModel([calls(["delegate_to_helper", { task: "help" }, "d1"]), "done"]), subAgents: [helper], maxDelegationDepth });
  const resultOf = async (agent: Agent, depth: number) => (await agent.run("go", { depth })).messages.find((message) => message.role === "tool")?.content;
  assert.equal(await resultOf(lead(1), 0), "helped");
  assert.match(String(await resultOf(lead(1), 1)), /^Delegation refused: "helper" would run at depth 2, beyond the maximum delegation depth of 1/);
  assert.equal(await resultOf(lead(), 2), "helped", "the default is 3");
});

test("a run aborted before it starts does not ask the session's memory for its history", async () => {
  const loads: string[] = [];
  const memory = {
    loadHistory: async (sessionId: string) => {
      loads.push(sessionId);
      return [];
    },
    onEvent: () => {},
  };
  const controller = new AbortController();
  controller.abort("gone");
  const result = await new Agent({ model: new ScriptedModel(["never"]), memory }).run("go", { sessionId: "s-1", signal: controller.signal });
  assert.equal(result.state, "ABORTED");
  assert.deepEqual(loads, []);
});

test("a toolset is an object: a function carrying toolset fields is refused as a tool without execute", () => {
  const functionSet = Object.assign(function set() {}, { toolsVersion: 0, loadedTools: [] });
  assert.throws(() => make({ tools: [functionSet as never] }), { name: "TypeError", message: /every tool needs a name and an execute function.*\(got "set"\)$/ });
});

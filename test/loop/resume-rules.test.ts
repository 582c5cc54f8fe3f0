// A resumed run keeps every rule of the first pass: each call of the stopped wave that has not run
// passes the same gate again (arguments parsed, bound and validated, deniedTools, the tool guardrail
// with its rewriting, the approval), so a denied call never runs, whatever was approved.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, type AgentConfig, defineTool, type LoopEvent, ResumeError, type RunCheckpoint, type RunResult, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { argumentsHash } from "../../src/loop/checkpoint.js";
import { calls, eventsOf, ofType } from "./helpers.js";

/** pay (needs approval), wipe and look: each records its runs with the arguments it got. */
function shop() {
  const ran: Array<[string, unknown]> = [];
  const tool = (name: string, needsApproval = false) =>
    defineTool<{ amount?: number }>({
      name,
      description: name,
      parameters: { type: "object", properties: { amount: { type: "number" } } },
      needsApproval,
      execute: (args) => {
        ran.push([name, args]);
        return name === "wipe" ? "wiped" : `${name} ${JSON.stringify(args)}`;
      },
    });
  return { ran, tools: [tool("pay", true), tool("wipe"), tool("look")] };
}

const wave = calls(["pay", { amount: 500 }, "c_pay"], ["wipe", {}, "c_wipe"], ["look", {}, "c_look"]);
const denyWipe: NonNullable<AgentConfig["guardrails"]>["tool"] = ({ toolName }) => (toolName === "wipe" ? { allow: false, reason: "no wiping" } : { allow: true });

function results(result: RunResult): Array<[string, unknown]> {
  return result.messages.filter((message): message is ToolResultMessage => message.role === "tool").map((message) => [message.toolCallId, message.content]);
}

function toolErrors(events: LoopEvent[]): Array<[string, string, string]> {
  return ofType(events, "tool-error").map((event) => [event.toolCallId, event.kind, event.message]);
}

function roundTrip(checkpoint: RunCheckpoint | undefined): RunCheckpoint {
  assert.ok(checkpoint, "the run stopped with a checkpoint");
  return JSON.parse(JSON.stringify(checkpoint));
}

test("the issue's case: guardrail denies wipe, pay needs approval; after the resume wipe gets the same result and tool-error as without the approval", async () => {
  // Without any approval in the way (pay approved on the spot): the reference.
  const reference = shop();
  const direct = new Agent({ model: new ScriptedModel([wave, "done"]), tools: reference.tools, guardrails: { tool: denyWipe } });
  const directRun = direct.run("go", { onEvent: (event) => event.type === "approval-request" && directRun.approve(event.toolCallId) });
  const directEvents = await eventsOf(directRun);

  const { ran, tools } = shop();
  const agent = new Agent({ model: new ScriptedModel([wave, "done"]), tools, guardrails: { tool: denyWipe }, onApproval: "interrupt" });
  const first = await agent.run("go");
  assert.equal(first.state, "INTERRUPTED");
  assert.deepEqual(ran, [], "nothing ran before the decision");
  const resumed = agent.resume(roundTrip(first.checkpoint), { decisions: { c_pay: { approve: true } } });
  const events = await eventsOf(resumed);
  const result = await resumed;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(ran, [
    ["pay", { amount: 500 }],
    ["look", {}],
  ]);
  assert.deepEqual(results(result), [
    ["c_pay", 'pay {"amount":500}'],
    ["c_wipe", "Tool denied by guardrail: no wiping"],
    ["c_look", "look {}"],
  ]);
  assert.deepEqual(toolErrors(events), toolErrors(directEvents));
  assert.deepEqual(toolErrors(events), [["c_wipe", "guardrail", "Tool denied by guardrail: no wiping"]]);
  assert.deepEqual(results(result), results(await directRun));
});

test("the resume asks the guardrail again: a call denied since the interruption never runs, approved or not", async () => {
  const { ran, tools } = shop();
  const denied = new Set(["wipe"]);
  const agent = new Agent({
    model: new ScriptedModel([wave, "done"]),
    tools,
    guardrails: { tool: ({ toolName }) => (denied.has(toolName) ? { allow: false, reason: `${toolName} is off` } : { allow: true }) },
    onApproval: "interrupt",
  });
  const first = await agent.run("go");
  denied.add("pay"); // the operator's policy changed while the approval waited
  const resumed = agent.resume(roundTrip(first.checkpoint), { decisions: { c_pay: { approve: true } } });
  const events = await eventsOf(resumed);
  const result = await resumed;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(ran, [["look", {}]]);
  assert.deepEqual(results(result).slice(0, 2), [
    ["c_pay", "Tool denied by guardrail: pay is off"],
    ["c_wipe", "Tool denied by guardrail: wipe is off"],
  ]);
  assert.deepEqual(
    toolErrors(events).map(([id, kind]) => [id, kind]),
    [
      ["c_pay", "guardrail"],
      ["c_wipe", "guardrail"],
    ],
  );
});

test("rewritten arguments: the approval is asked for them and they are what runs after the resume", async () => {
  const { ran, tools } = shop();
  const agent = new Agent({
    model: new ScriptedModel([wave, "done"]),
    tools,
    guardrails: { tool: (context) => (context.toolName === "pay" ? { allow: true, arguments: { amount: Math.min(100, Number(context.arguments.amount)) } } : denyWipe(context)) },
    onApproval: "interrupt",
  });
  const first = await agent.run("go");
  assert.deepEqual(first.checkpoint?.pending.map((entry) => entry.arguments), [{ amount: 100 }]);
  const result = await agent.resume(roundTrip(first.checkpoint), { decisions: { c_pay: { approve: true, argumentsHash: first.checkpoint!.pending[0]!.argumentsHash } } });
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(ran, [
    ["pay", { amount: 100 }],
    ["look", {}],
  ]);
});

test("a guardrail that rewrites differently at the resume: the approval does not cover the new arguments, the call is asked about again", async () => {
  const { ran, tools } = shop();
  let cap = 100;
  const agent = new Agent({
    model: new ScriptedModel([wave, "done"]),
    tools,
    guardrails: { tool: (context) => (context.toolName === "pay" ? { allow: true, arguments: { amount: cap } } : denyWipe(context)) },
    onApproval: "interrupt",
  });
  const first = await agent.run("go");
  cap = 400;
  const second = agent.resume(roundTrip(first.checkpoint), { decisions: { c_pay: { approve: true } } });
  const events = await eventsOf(second);
  const stopped = await second;
  assert.equal(stopped.state, "INTERRUPTED");
  assert.deepEqual(ran, [], "an approval of 100 does not pay 400");
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => [event.toolCallId, event.arguments]),
    [["c_pay", { amount: 400 }]],
  );
  const third = await agent.resume(roundTrip(stopped.checkpoint), { decisions: { c_pay: { approve: true } } });
  assert.equal(third.state, "COMPLETED");
  assert.deepEqual(ran, [
    ["pay", { amount: 400 }],
    ["look", {}],
  ]);
});

test("decisions one at a time: the guardrail holds at every resume, and a rejection stands", async () => {
  const { ran, tools } = shop();
  const twoPays = calls(["pay", { amount: 1 }, "p1"], ["wipe", {}, "c_wipe"], ["pay", { amount: 2 }, "p2"]);
  const agent = new Agent({ model: new ScriptedModel([twoPays, "done"]), tools, guardrails: { deniedTools: [{ tools: "wi*", reason: "never wipe" }] }, onApproval: "interrupt" });
  const first = await agent.run("go");
  assert.deepEqual(first.checkpoint?.pending.map((entry) => entry.toolCallId), ["p1", "p2"]);
  const second = await agent.resume(roundTrip(first.checkpoint), { decisions: { p1: { approve: false, reason: "not that one" } } });
  assert.equal(second.state, "INTERRUPTED");
  assert.deepEqual(second.checkpoint?.pending.map((entry) => entry.toolCallId), ["p2"]);
  const third = agent.resume(roundTrip(second.checkpoint), { decisions: { p2: { approve: true } } });
  const events = await eventsOf(third);
  const result = await third;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(ran, [["pay", { amount: 2 }]]);
  assert.deepEqual(results(result), [
    ["p1", "Rejected: not that one"],
    ["c_wipe", "Tool denied by guardrail: never wipe"],
    ["p2", 'pay {"amount":2}'],
  ]);
  assert.deepEqual(toolErrors(events), [
    ["p1", "rejected", "Rejected: not that one"],
    ["c_wipe", "guardrail", "Tool denied by guardrail: never wipe"],
  ]);
});

test("wait mode after an approval timeout: the denied call does not run, the timed-out one is rejected", async () => {
  const { ran, tools } = shop();
  const agent = new Agent({ model: new ScriptedModel([wave, "done"]), tools, guardrails: { tool: denyWipe }, approvalTimeoutMs: 20 });
  const result = await agent.run("go");
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(ran, [["look", {}]]);
  assert.deepEqual(results(result).slice(0, 2), [
    ["c_pay", "Rejected: approval timed out after 20 ms"],
    ["c_wipe", "Tool denied by guardrail: no wiping"],
  ]);
});

test("a sub-agent's resume applies the sub-agent's guardrails to its whole wave", async () => {
  const { ran, tools } = shop();
  const child = new Agent({ name: "clerk", model: new ScriptedModel([wave, "clerk done"]), tools, guardrails: { tool: denyWipe } });
  const parent = new Agent({ name: "boss", model: new ScriptedModel([calls(["delegate_to_clerk", { task: "settle" }, "d1"]), "all done"]), subAgents: [child], onApproval: "interrupt" });
  const first = await parent.run("go");
  assert.equal(first.state, "INTERRUPTED");
  assert.deepEqual(first.checkpoint?.pending.map((entry) => [entry.toolCallId, entry.agentPath]), [["c_pay", ["boss", "clerk"]]]);
  const resumed = parent.resume(roundTrip(first.checkpoint), { decisions: { c_pay: { approve: true } } });
  const events = await eventsOf(resumed);
  const result = await resumed;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(ran, [
    ["pay", { amount: 500 }],
    ["look", {}],
  ]);
  const nestedErrors = events.flatMap((event) => (event.type === "nested" && event.event.type === "tool-error" ? [[event.event.toolCallId, event.event.kind]] : []));
  assert.deepEqual(nestedErrors, [["c_wipe", "guardrail"]]);
});

test("an edited checkpoint never runs the edited arguments: a decided call's arguments (refused), or with the hash recomputed (asked again)", async () => {
  const { ran, tools } = shop();
  const twoPays = calls(["pay", { amount: 1 }, "p1"], ["pay", { amount: 2 }, "p2"]);
  const agent = new Agent({ model: new ScriptedModel([twoPays, "done"]), tools, onApproval: "interrupt" });
  const first = await agent.run("go");
  const second = await agent.resume(roundTrip(first.checkpoint), { decisions: { p1: { approve: true } } });
  assert.equal(second.state, "INTERRUPTED");
  const text = JSON.stringify(second.checkpoint);

  // Issue 27, item 1: the already-decided call's arguments were edited after the first resume.
  const edited = JSON.parse(text) as RunCheckpoint;
  edited.wave.decided.p1!.request.arguments = { amount: 1_000_000 };
  assert.throws(() => agent.resume(edited, { decisions: { p2: { approve: true } } }), (error: Error) => {
    assert.ok(error instanceof ResumeError);
    assert.match(error.message, /arguments of tool call "p1" \(pay\) changed since the approval was requested/);
    return true;
  });

  // The same edit with the hash recomputed passes the check, but what runs comes from the model's call.
  const forged = JSON.parse(text) as RunCheckpoint;
  const request = forged.wave.decided.p1!.request;
  request.arguments = { amount: 1_000_000 };
  request.argumentsHash = argumentsHash(forged.wave.calls[0]!, request.arguments);
  const forgedPending = forged.pending[0]!;
  forgedPending.arguments = { amount: 2_000_000 };
  forgedPending.argumentsHash = argumentsHash(forged.wave.calls[1]!, forgedPending.arguments);
  const resumed = agent.resume(forged, { decisions: { p2: { approve: true } } });
  const events = await eventsOf(resumed);
  const result = await resumed;
  assert.deepEqual(ran, [], "neither edited amount was paid");
  assert.equal(result.state, "INTERRUPTED");
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => [event.toolCallId, event.arguments]),
    [
      ["p1", { amount: 1 }],
      ["p2", { amount: 2 }],
    ],
  );
});

test("a resumed run knows where its input starts: the context budget keeps the input, and a follow-up starts a new input", async () => {
  // A checkpoint made before `counters.inputStart` was kept resumes the same way.
  for (const made of ["now", "before inputStart was kept"]) {
    const { tools } = shop();
    const history = [
      { role: "user" as const, content: "an old question" },
      { role: "assistant" as const, content: [{ type: "text" as const, text: "an old answer" }] },
    ];
    // One script for the run's two inputs (the follow-up goes on after the first input's entries).
    const model = new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), "paid", "more done"], { continueAcrossRuns: true });
    // One unit a message, room for five: the old exchange must go, never the input.
    const agent = new Agent({ model, tools, instructions: "be brief", onApproval: "interrupt", context: { maxTokens: 5, reserveTokens: 0, useReportedUsage: false, estimator: () => 1 } });
    const first = await agent.run("pay one", { history });
    assert.equal(first.state, "INTERRUPTED");
    const checkpoint = roundTrip(first.checkpoint);
    assert.equal(checkpoint.counters.inputStart, 3);
    if (made !== "now") delete checkpoint.counters.inputStart;
    const resumed = agent.resume(checkpoint, { decisions: { p1: { approve: true } } });
    resumed.followUp("and more");
    const result = await resumed;
    assert.equal(result.state, "COMPLETED", made);
    assert.equal(result.text, "more done", made);
    const [afterResume, followUp] = model.requests.slice(-2);
    const texts = (request: typeof afterResume) => request!.messages.map((message) => (message.role === "user" || message.role === "system" ? message.content : message.role));
    assert.deepEqual(texts(afterResume), ["be brief", "[agentloop] 2 earlier messages were left out to fit the context budget.", "pay one", "assistant", "tool"], made);
    assert.equal(afterResume!.inputStart, 2, `${made}: the input, where text protocols count their steps from`);
    assert.equal(followUp!.messages[followUp!.inputStart!]!.content, "and more", made);
  }
});

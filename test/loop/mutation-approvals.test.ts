// The wave gate (src/loop/approvals.ts) and the resume (src/loop/resume.ts), as a user of the public
// API sees them: what is asked about and what is not, what the events say, what a resume keeps.
// Written for the surviving mutants of `npm run mutation -- src/loop/approvals.ts src/loop/resume.ts`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, type ApprovalContext, defineTool, type LoopEvent, type RunCheckpoint, type RunResult, ScriptedModel, type SessionMemory, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

type Approval = boolean | ((args: Record<string, unknown>, context: ApprovalContext) => boolean | Promise<boolean>);

/** A tool that records the arguments of each run. */
function recorded(name: string, needsApproval: Approval = false, required: string[] = []) {
  const ran: Array<Record<string, unknown>> = [];
  const tool = defineTool<Record<string, unknown>>({
    name,
    description: name,
    parameters: { type: "object", properties: { path: { type: "string" }, amount: { type: "number" } }, required },
    needsApproval,
    execute: (args) => {
      ran.push(args);
      return `${name} done`;
    },
  });
  return { tool, ran };
}

function results(result: RunResult): Array<[string, unknown]> {
  return result.messages.filter((message): message is ToolResultMessage => message.role === "tool").map((message) => [message.toolCallId, message.content]);
}

function roundTrip(checkpoint: RunCheckpoint | undefined): RunCheckpoint {
  assert.ok(checkpoint, "the run stopped with a checkpoint");
  return JSON.parse(JSON.stringify(checkpoint));
}

/** The events of a sub-agent, unwrapped from their `nested` envelopes. */
function nestedOf(events: LoopEvent[]): LoopEvent[] {
  return events.flatMap((event) => (event.type === "nested" ? [event.event] : []));
}

test("in a gated wave, an unknown tool, unparseable and invalid arguments are the wave's errors, never asked about; the valid call is", async () => {
  const write = recorded("write_file", true, ["path"]);
  const note = recorded("note", true);
  const wave = JSON.stringify({
    tool_calls: [
      { id: "ghost", name: "no_such_tool", arguments: {} },
      { id: "garbage", name: "note", arguments: "this is not json at all" },
      { id: "invalid", name: "write_file", arguments: { path: 42 } },
      { id: "good", name: "write_file", arguments: { path: "a.txt" } },
    ],
  });
  const agent = new Agent({ model: new ScriptedModel([wave, "done"]), tools: [write.tool, note.tool] });
  const run = agent.run("go", { onEvent: (event) => event.type === "approval-request" && run.approve(event.toolCallId) });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => event.toolCallId),
    ["good"],
  );
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => [event.toolCallId, event.kind]),
    [
      ["ghost", "unknown_tool"],
      ["garbage", "invalid_arguments"],
      ["invalid", "schema"],
    ],
  );
  assert.deepEqual(write.ran, [{ path: "a.txt" }]);
  assert.deepEqual(note.ran, []);
});

test("needsApproval gets the call's context; one that throws asks a person (fail closed)", async () => {
  const seen: ApprovalContext[] = [];
  const careful = recorded("careful", (_args, context) => {
    seen.push(context);
    return false;
  });
  const broken = recorded("broken", () => {
    throw new Error("policy service down");
  });
  const agent = new Agent({ name: "clerk", model: new ScriptedModel([calls(["careful", { path: "x" }, "c1"], ["broken", { path: "y" }, "b1"]), "done"]), tools: [careful.tool, broken.tool] });
  const run = agent.run("go", { inputs: { tenant: "acme" }, onEvent: (event) => event.type === "approval-request" && run.approve(event.toolCallId) });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => event.toolCallId),
    ["b1"],
    "the throwing check asks; the one answering false does not",
  );
  assert.deepEqual(seen, [{ toolCallId: "c1", toolName: "careful", runId: run.id, agentPath: ["clerk"], inputs: { tenant: "acme" } }]);
  assert.deepEqual(careful.ran, [{ path: "x" }]);
  assert.deepEqual(broken.ran, [{ path: "y" }]);
});

test("the events of a gated wave: guardrail verdicts (deny, rewrite) and wait-mode decisions name the call, the tool and the reason", async () => {
  const pay = recorded("pay", true);
  const wipe = recorded("wipe");
  const agent = new Agent({
    model: new ScriptedModel([calls(["pay", { amount: 5 }, "p1"], ["pay", { amount: 7 }, "p2"], ["wipe", {}, "w1"]), "done"]),
    tools: [pay.tool, wipe.tool],
    guardrails: {
      tool: ({ toolName, arguments: args }) => (toolName === "wipe" ? { allow: false, reason: "no wiping" } : args.amount === 7 ? { allow: true, arguments: { amount: 6 } } : { allow: true }),
    },
  });
  const run = agent.run("go", {
    onEvent: (event) => {
      if (event.type !== "approval-request") return;
      if (event.toolCallId === "p1") run.approve("p1");
      else run.reject(event.toolCallId, "too much");
    },
  });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  const strip = ({ type, guardrail, allowed, reason, toolCallId, name }: Extract<LoopEvent, { type: "guardrail" }>) => ({ type, guardrail, allowed, reason, toolCallId, name });
  assert.deepEqual(ofType(events, "guardrail").map(strip), [
    { type: "guardrail", guardrail: "tool", allowed: true, reason: "arguments rewritten", toolCallId: "p2", name: "pay" },
    { type: "guardrail", guardrail: "tool", allowed: false, reason: "no wiping", toolCallId: "w1", name: "wipe" },
  ]);
  assert.ok(ofType(events, "guardrail").every((event) => event.runId === run.id));
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => [event.toolCallId, event.arguments]),
    [
      ["p1", { amount: 5 }],
      ["p2", { amount: 6 }],
    ],
  );
  assert.deepEqual(
    ofType(events, "approval-decision").map(({ runId, toolCallId, name, approve, reason, checkpointId }) => ({ runId, toolCallId, name, approve, reason, checkpointId })),
    [
      { runId: run.id, toolCallId: "p1", name: "pay", approve: true, reason: undefined, checkpointId: undefined },
      { runId: run.id, toolCallId: "p2", name: "pay", approve: false, reason: "too much", checkpointId: undefined },
    ],
  );
  assert.deepEqual(pay.ran, [{ amount: 5 }]);
  assert.deepEqual(results(result), [
    ["p1", "pay done"],
    ["p2", "Rejected: too much"],
    ["w1", "Tool denied by guardrail: no wiping"],
  ]);
});

test("interrupt mode: a rejection without a reason says so; the interrupted run has nothing waiting for run.approve", async () => {
  const pay = recorded("pay", true);
  const agent = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), "done"]), tools: [pay.tool], onApproval: "interrupt" });
  const run = agent.run("go");
  const first = await run;
  assert.equal(first.state, "INTERRUPTED");
  assert.deepEqual(run.pendingApprovals, []);
  assert.throws(() => run.approve("p1"), /no approval is pending for tool call "p1" \(pending: none\)/, "an interrupted run is resumed with agent.resume, not run.approve");
  const resumed = agent.resume(roundTrip(first.checkpoint), { decisions: { p1: { approve: false } } });
  const events = await eventsOf(resumed);
  const result = await resumed;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(results(result), [["p1", "Rejected: rejected by the user"]]);
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => [event.toolCallId, event.kind]),
    [["p1", "rejected"]],
  );
  assert.deepEqual(pay.ran, []);
});

test("a call asked about stays asked until decided, even when needsApproval would not ask any more at the resume", async () => {
  let strict = true;
  const pay = recorded("pay", () => strict);
  const agent = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"], ["pay", { amount: 2 }, "p2"]), "done"]), tools: [pay.tool], onApproval: "interrupt" });
  const first = await agent.run("go");
  assert.deepEqual(
    first.checkpoint?.pending.map((entry) => entry.toolCallId),
    ["p1", "p2"],
  );
  strict = false;
  const second = await agent.resume(roundTrip(first.checkpoint), { decisions: { p1: { approve: true } } });
  assert.equal(second.state, "INTERRUPTED", "p2 was asked about and not decided");
  assert.deepEqual(
    second.checkpoint?.pending.map((entry) => entry.toolCallId),
    ["p2"],
  );
  assert.deepEqual(pay.ran, []);
  const third = await agent.resume(roundTrip(second.checkpoint), { decisions: { p2: { approve: true } } });
  assert.equal(third.state, "COMPLETED");
  assert.deepEqual(pay.ran, [{ amount: 1 }, { amount: 2 }]);
});

test("sub-agent, interrupt mode, decisions one at a time: each decision is the child's event; the parent's gate never re-checks the sibling that ran", async () => {
  const write = recorded("write_file", true);
  const sibling = recorded("read_file");
  const guarded: string[] = [];
  const child = new Agent({ name: "worker", model: new ScriptedModel([calls(["write_file", { path: "1" }, "cw1"], ["write_file", { path: "2" }, "cw2"]), "child done"]), tools: [write.tool] });
  const parent = new Agent({
    name: "boss",
    model: new ScriptedModel([calls(["delegate_to_worker", { task: "write" }, "d1"], ["read_file", { path: "side" }, "r1"]), "all done"]),
    tools: [sibling.tool],
    subAgents: [child],
    onApproval: "interrupt",
    guardrails: {
      tool: ({ toolCallId }) => {
        guarded.push(toolCallId);
        return { allow: true };
      },
    },
  });
  const first = await parent.run("go");
  assert.equal(first.state, "INTERRUPTED");
  assert.deepEqual(sibling.ran, [{ path: "side" }]);

  const secondRun = parent.resume(roundTrip(first.checkpoint), { decisions: { cw1: { approve: true } } });
  const secondEvents = await eventsOf(secondRun);
  const second = await secondRun;
  assert.equal(second.state, "INTERRUPTED");
  assert.deepEqual(
    second.checkpoint?.pending.map((entry) => [entry.toolCallId, entry.agentPath]),
    [["cw2", ["boss", "worker"]]],
  );
  assert.deepEqual(ofType(secondEvents, "approval-decision"), [], "the parent decides nothing of its own");
  assert.deepEqual(
    ofType(nestedOf(secondEvents), "approval-decision").map((event) => [event.toolCallId, event.approve]),
    [["cw1", true]],
  );
  assert.deepEqual(write.ran, [], "the child's wave waits for both decisions");

  const thirdRun = parent.resume(roundTrip(second.checkpoint), { decisions: { cw2: { approve: false, reason: "no" } } });
  const thirdEvents = await eventsOf(thirdRun);
  const third = await thirdRun;
  assert.equal(third.state, "COMPLETED");
  assert.equal(third.text, "all done");
  assert.deepEqual(ofType(thirdEvents, "approval-decision"), []);
  assert.deepEqual(
    ofType(nestedOf(thirdEvents), "approval-decision").map((event) => [event.toolCallId, event.approve, event.reason]),
    [["cw2", false, "no"]],
  );
  assert.deepEqual(write.ran, [{ path: "1" }]);
  assert.deepEqual(sibling.ran, [{ path: "side" }], "the sibling ran once");
  assert.deepEqual(
    guarded.filter((id) => id === "r1"),
    ["r1"],
    "a call that already ran is not passed through the guardrail again",
  );
  assert.deepEqual(results(third), [
    ["d1", "child done"],
    ["r1", "read_file done"],
  ]);
});

test("a resume goes on with the run's counters: turns count toward maxTurns, usage adds up, loop detection sees the calls before", async () => {
  // maxTurns 2: one turn before the interruption, one after, then the limit.
  const pay = recorded("pay", true);
  const look = recorded("look");
  const limited = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), calls(["look", {}, "l1"]), "never said"]), tools: [pay.tool, look.tool], maxTurns: 2, onApproval: "interrupt" });
  const first = await limited.run("go");
  assert.equal(first.turns, 1);
  const resumedRun = limited.resume(roundTrip(first.checkpoint), { decisions: { p1: { approve: true } } });
  const events = await eventsOf(resumedRun);
  const resumed = await resumedRun;
  assert.equal(resumed.state, "TURN_LIMIT");
  assert.equal(resumed.turns, 2);
  assert.deepEqual(look.ran, [{}], "the second turn's wave ran, no third turn");
  const usageAfter = ofType(events, "usage").reduce((sum, event) => sum + event.usage.totalTokens, 0);
  assert.ok(first.usage.totalTokens > 0 && usageAfter > 0);
  assert.equal(resumed.usage.totalTokens, first.usage.totalTokens + usageAfter, "the run's usage is both legs'");

  // A window of 4 filled by two waves [look, pay], each stopped for pay's approval and resumed.
  const wave = calls(["look", {}, "l"], ["pay", { amount: 1 }, "p"]);
  const looping = new Agent({ model: new ScriptedModel([wave, wave, "done"]), tools: [recorded("pay", true).tool, recorded("look").tool], loopDetection: { window: 4 }, onApproval: "interrupt" });
  const one = await looping.run("go");
  const two = await looping.resume(roundTrip(one.checkpoint), { decisions: { p: { approve: true } } });
  assert.equal(two.state, "INTERRUPTED");
  const threeRun = looping.resume(roundTrip(two.checkpoint), { decisions: { p: { approve: true } } });
  const threeEvents = await eventsOf(threeRun);
  assert.equal((await threeRun).state, "COMPLETED");
  assert.deepEqual(
    ofType(threeEvents, "loop-warning").map((event) => event.pattern),
    [["look", "pay"]],
  );
});

test("across processes the session's log decides: a checkpoint it records as resumed is refused; no session or no such check, no refusal", async () => {
  const asked: Array<[string, string]> = [];
  const memory = (resumedIds: string[] | undefined): SessionMemory => ({
    onEvent: () => undefined,
    loadHistory: async () => [],
    ...(resumedIds
      ? {
          checkpointResumed: async (sessionId: string, checkpointId: string) => {
            asked.push([sessionId, checkpointId]);
            return resumedIds.includes(checkpointId);
          },
        }
      : {}),
  });
  const interrupted = async (agent: Agent, sessionId?: string) => {
    const result = await agent.run("go", { sessionId });
    return roundTrip(result.checkpoint);
  };
  const script = () => new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), "done"]);

  // The log records a resume of this checkpoint (another process did it): refused, nothing runs.
  const refusedPay = recorded("pay", true);
  let recordedIds: string[] = [];
  const refusing = new Agent({ model: script(), tools: [refusedPay.tool], memory: memory(undefined), onApproval: "interrupt" });
  const checkpoint = await interrupted(refusing, "s1");
  recordedIds = [checkpoint.id];
  const logged = new Agent({ model: script(), tools: [refusedPay.tool], memory: memory(recordedIds), onApproval: "interrupt" });
  const refusedRun = logged.resume(checkpoint, { decisions: { p1: { approve: true } } });
  const events = await eventsOf(refusedRun);
  const refused = await refusedRun;
  assert.equal(refused.state, "FAILED");
  assert.equal(refused.error?.kind, "invalid_request");
  assert.equal(refused.reason, `checkpoint ${checkpoint.id} was already resumed (session s1 records it); a checkpoint is resumed once`);
  assert.equal(ofType(events, "run-start")[0]?.resumedFrom, undefined);
  assert.deepEqual(
    ofType(events, "error").map((event) => [event.error.message, event.fatal]),
    [[refused.reason, true]],
  );
  assert.deepEqual(asked, [["s1", checkpoint.id]]);
  assert.deepEqual(refusedPay.ran, []);

  // Not recorded: the resume runs. A store without the check, or a run without a session: not asked.
  for (const [label, store, sessionId] of [
    ["not recorded", memory([]), "s2"],
    ["a store without the check", memory(undefined), "s3"],
    ["no session", memory(["anything"]), undefined],
  ] as const) {
    asked.length = 0;
    const pay = recorded("pay", true);
    const agent = new Agent({ model: script(), tools: [pay.tool], memory: store, onApproval: "interrupt" });
    const stopped = await interrupted(agent, sessionId);
    const result = await agent.resume(stopped, { decisions: { p1: { approve: true } } });
    assert.equal(result.state, "COMPLETED", label);
    assert.deepEqual(pay.ran, [{ amount: 1 }], label);
    assert.deepEqual(asked, label === "not recorded" ? [["s2", stopped.id]] : [], label);
  }
});

test("resume refuses, naming the problem: each way a checkpoint is not one, decisions that are not an object or not a decision, an edited sub-agent call", async () => {
  const pay = recorded("pay", true);
  const agent = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), "done"]), tools: [pay.tool], onApproval: "interrupt" });
  const text = JSON.stringify((await agent.run("go")).checkpoint);
  const edited = (edit: (checkpoint: Record<string, any>) => void) => {
    const checkpoint = JSON.parse(text);
    edit(checkpoint);
    return checkpoint as RunCheckpoint;
  };
  const notACheckpoint = /^ResumeError: agent\.resume: the checkpoint is not a run checkpoint \(expected the `checkpoint` of an INTERRUPTED run's result, version 1\)$/;
  for (const checkpoint of [null, "ckpt", edited((c) => (c.version = 2)), edited((c) => (c.id = 7)), edited((c) => (c.pending = {})), edited((c) => delete c.wave), edited((c) => (c.wave = { calls: "w1" })), edited((c) => (c.wave.nested = null)), edited((c) => (c.wave.nested = 5)), edited((c) => (c.wave.nested = { d1: { version: 1 } }))]) {
    assert.throws(() => agent.resume(checkpoint as never, { decisions: { p1: { approve: true } } }), (error: Error) => notACheckpoint.test(`${error.name}: ${error.message}`), JSON.stringify(checkpoint)?.slice(0, 40));
  }
  for (const decisions of [null, "approve", undefined]) {
    assert.throws(() => agent.resume(JSON.parse(text), { decisions } as never), /^ResumeError: agent\.resume: decisions must be an object \{ \[toolCallId\]: \{ approve: true \} \| \{ approve: false, reason\? \} \}$/);
  }
  for (const decision of [null, "yes", { approve: "true" }]) {
    const expected = `agent.resume: the decision for "p1" must be { approve: true } or { approve: false, reason? }, got ${JSON.stringify(decision)}`;
    assert.throws(() => agent.resume(JSON.parse(text), { decisions: { p1: decision as never } }), (error: Error) => error.message === expected);
  }
  assert.throws(() => agent.resume(edited((c) => (c.pending = [])), { decisions: { p1: { approve: true } } }), /no approval is pending for tool call "p1" \(pending: none\)$/);
  assert.deepEqual(pay.ran, [], "nothing ran on a refused resume");
  // A checkpoint without `wave.nested` (written before sub-agents' checkpoints were kept) has none: it resumes.
  const older = await agent.resume(edited((c) => delete c.wave.nested), { decisions: { p1: { approve: true } } });
  assert.equal(older.state, "COMPLETED");
  assert.deepEqual(pay.ran, [{ amount: 1 }], "the approved call ran once");
  pay.ran.length = 0;

  // A sub-agent's pending call, edited in the parent's checkpoint, is refused as the parent's own would be.
  const write = recorded("write_file", true);
  const child = new Agent({ name: "worker", model: new ScriptedModel([calls(["write_file", { path: "safe" }, "cw"]), "child done"]), tools: [write.tool] });
  const parent = new Agent({ name: "boss", model: new ScriptedModel([calls(["delegate_to_worker", { task: "write" }, "d1"]), "all done"]), subAgents: [child], onApproval: "interrupt" });
  const nestedText = JSON.stringify((await parent.run("go")).checkpoint);
  const editedPending = JSON.parse(nestedText) as RunCheckpoint;
  editedPending.pending[0]!.arguments = { path: "/etc/passwd" };
  assert.throws(() => parent.resume(editedPending, { decisions: { cw: { approve: true } } }), /arguments of tool call "cw" \(write_file\) changed since the approval was requested/);
  const editedCall = JSON.parse(nestedText) as RunCheckpoint;
  editedCall.wave.nested.d1!.wave.calls[0]!.arguments = '{"path":"/etc/passwd"}';
  assert.throws(() => parent.resume(editedCall, { decisions: { cw: { approve: true } } }), /arguments of tool call "cw" \(write_file\) changed since the approval was requested/);
  // A sub-agent's checkpoint in the wave that is not one is refused by name, not a TypeError.
  for (const breakNested of [
    (c: Record<string, any>) => delete c.wave.nested.d1.wave,
    (c: Record<string, any>) => (c.wave.nested.d1 = "ckpt"),
    (c: Record<string, any>) => (c.wave.nested.d1.version = 2),
    (c: Record<string, any>) => (c.wave.nested = "d1"),
  ]) {
    const broken = JSON.parse(nestedText);
    breakNested(broken);
    assert.throws(() => parent.resume(broken, { decisions: { cw: { approve: true } } }), (error: Error) => notACheckpoint.test(`${error.name}: ${error.message}`), String(breakNested));
  }
  assert.equal((await parent.resume(JSON.parse(nestedText), { decisions: { cw: { approve: true } } })).state, "COMPLETED");
  assert.deepEqual(write.ran, [{ path: "safe" }]);
});

test("wait mode, the broker: pendingApprovals lists the waiting calls, a wrong id is refused naming them, each answer takes one off", async () => {
  const pay = recorded("pay", true);
  const agent = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"], ["pay", { amount: 2 }, "p2"]), "done"]), tools: [pay.tool] });
  const run = agent.run("go");
  const seen: string[][] = [];
  for await (const event of run) {
    if (event.type !== "approval-request" || event.toolCallId !== "p2") continue;
    seen.push(run.pendingApprovals);
    assert.throws(() => run.approve("p3"), /^Error: no approval is pending for tool call "p3" \(pending: p1, p2\)$/);
    run.approve("p2");
    seen.push(run.pendingApprovals);
    assert.throws(() => run.approve("p2"), /\(pending: p1\)$/, "answered once");
    run.reject("p1");
    seen.push(run.pendingApprovals);
  }
  const result = await run;
  assert.deepEqual(seen, [["p1", "p2"], ["p1"], []]);
  assert.deepEqual(results(result), [
    ["p1", "Rejected: rejected by the user"],
    ["p2", "pay done"],
  ]);
});

test("an approval timeout and an abort: whichever comes first decides, the other changes nothing", async () => {
  const pay = recorded("pay", true);
  // The timeout first: rejected, the run goes on (the abort after it has nothing to cancel).
  const timedOut = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), "after the timeout"]), tools: [pay.tool], approvalTimeoutMs: 1 });
  const first = await timedOut.run("go");
  assert.equal(first.state, "COMPLETED");
  assert.deepEqual(results(first), [["p1", "Rejected: approval timed out after 1 ms"]]);
  // The abort first: cancelled, and the long timeout never fires into the finished run.
  const aborted = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), "never"]), tools: [pay.tool], approvalTimeoutMs: 60_000 });
  const run = aborted.run("go", { onEvent: (event) => event.type === "approval-request" && queueMicrotask(() => run.abort("gone")) });
  const started = performance.now();
  const second = await run;
  assert.equal(second.state, "ABORTED");
  assert.ok(performance.now() - started < 30_000, "the pending timer does not hold the run");
  assert.deepEqual(run.pendingApprovals, []);
  assert.deepEqual(pay.ran, []);
});

test("an approval covers equal arguments whatever their key order: a guardrail rewriting the same values in another order at the resume is not asked again", async () => {
  const pay = recorded("pay", true);
  let leg = 0;
  const agent = new Agent({
    model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"], ["pay", { amount: 2 }, "p2"]), "done"]),
    tools: [pay.tool],
    onApproval: "interrupt",
    guardrails: { tool: ({ arguments: args }) => ({ allow: true, arguments: leg === 0 ? { amount: args.amount, path: "/tmp/x" } : { path: "/tmp/x", amount: args.amount } }) },
  });
  const first = await agent.run("go");
  leg = 1;
  const second = await agent.resume(roundTrip(first.checkpoint), { decisions: { p1: { approve: true } } });
  leg = 2;
  const thirdRun = agent.resume(roundTrip(second.checkpoint), { decisions: { p2: { approve: true } } });
  const events = await eventsOf(thirdRun);
  assert.equal((await thirdRun).state, "COMPLETED");
  assert.deepEqual(ofType(events, "approval-request"), [], "p1's approval still covers its arguments");
  assert.deepEqual(
    pay.ran.map((args) => args.amount),
    [1, 2],
  );
});

test("two sub-agents stopped in one wave: one resume decides both, each child's call is found in its own checkpoint", async () => {
  const writes = recorded("write_file", true);
  const child = (name: string, path: string) => new Agent({ name, model: new ScriptedModel([calls(["write_file", { path }, `${name}_w`]), `${name} done`]), tools: [writes.tool] });
  const parent = new Agent({
    name: "boss",
    model: new ScriptedModel([calls(["delegate_to_alpha", { task: "a" }, "da"], ["delegate_to_beta", { task: "b" }, "db"]), "both done"]),
    subAgents: [child("alpha", "a.txt"), child("beta", "b.txt")],
    onApproval: "interrupt",
  });
  const first = await parent.run("go");
  assert.deepEqual(
    first.checkpoint?.pending.map((entry) => [entry.toolCallId, entry.agentPath]),
    [
      ["alpha_w", ["boss", "alpha"]],
      ["beta_w", ["boss", "beta"]],
    ],
  );
  const edited = roundTrip(first.checkpoint);
  edited.wave.nested.db!.wave.calls[0]!.arguments = '{"path":"/etc/passwd"}';
  assert.throws(() => parent.resume(edited, { decisions: { alpha_w: { approve: true } } }), /arguments of tool call "beta_w" \(write_file\) changed/);
  const result = await parent.resume(roundTrip(first.checkpoint), { decisions: { alpha_w: { approve: true }, beta_w: { approve: true } } });
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(writes.ran, [{ path: "a.txt" }, { path: "b.txt" }]);
});

test("wait mode without approvalTimeoutMs waits as long as the person takes: an approval given later still runs the call", async () => {
  const pay = recorded("pay", true);
  const agent = new Agent({ model: new ScriptedModel([calls(["pay", { amount: 1 }, "p1"]), "done"]), tools: [pay.tool] });
  const run = agent.run("go", { onEvent: (event) => event.type === "approval-request" && setTimeout(() => run.approve("p1"), 30) });
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(results(result), [["p1", "pay done"]]);
});

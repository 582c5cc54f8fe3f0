import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, approvalRequestOf, defineTool, type LoopEvent, ResumeError, type RunCheckpoint, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

function counted(name: string, needsApproval: boolean | ((args: { path: string }) => boolean) = true) {
  const ran: string[] = [];
  const tool = defineTool<{ path: string }>({
    name,
    description: name,
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    needsApproval,
    execute: async ({ path }) => {
      ran.push(path);
      return `${name}(${path}) done`;
    },
  });
  return { tool, ran };
}

function toolResults(messages: readonly unknown[]): Array<[string, unknown]> {
  return (messages as ToolResultMessage[]).filter((message) => message.role === "tool").map((message) => [message.toolCallId, message.content]);
}

test("wait mode: one approval-request per call, run.approve runs it, run.reject gives `Rejected: <reason>`", async () => {
  const write = counted("write_file");
  const agent = new Agent({
    model: new ScriptedModel([calls(["write_file", { path: "a.txt" }, "w1"], ["write_file", { path: "b.txt" }, "w2"]), "Wrote a.txt."]),
    tools: [write.tool],
  });
  const run = agent.run("write both");
  const requests: Array<Extract<LoopEvent, { type: "approval-request" }>> = [];
  for await (const event of run) {
    if (event.type !== "approval-request") continue;
    requests.push(event);
    assert.equal(write.ran.length, 0, "nothing runs before the wave is decided");
    if (event.toolCallId === "w1") run.approve("w1");
    else run.reject("w2", "not that one");
  }
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "Wrote a.txt.");
  assert.deepEqual(
    requests.map((event) => [event.toolCallId, event.name, event.arguments]),
    [
      ["w1", "write_file", { path: "a.txt" }],
      ["w2", "write_file", { path: "b.txt" }],
    ],
  );
  assert.match(requests[0]!.argumentsHash, /^[0-9a-f]{32}$/);
  assert.deepEqual(write.ran, ["a.txt"]);
  assert.deepEqual(toolResults(result.messages), [
    ["w1", "write_file(a.txt) done"],
    ["w2", "Rejected: not that one"],
  ]);
  assert.throws(() => run.approve("w1"), /no approval is pending for tool call "w1"/);
});

test("a parallel wave with one call denied by a guardrail and one approved: only the approved one runs", async () => {
  const write = counted("write_file");
  const remove = counted("delete_file");
  const agent = new Agent({
    model: new ScriptedModel([calls(["delete_file", { path: "/" }, "d"], ["write_file", { path: "x" }, "w"]), "ok"]),
    tools: [remove.tool, write.tool],
    guardrails: { deniedTools: [{ tools: "delete_*", reason: "never delete" }] },
  });
  const run = agent.run("go", {
    onEvent: (event) => {
      if (event.type === "approval-request") run.approve(event.toolCallId);
    },
  });
  const events = await eventsOf(run);
  const result = await run;
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => event.toolCallId),
    ["w"],
    "a denied call is never asked about",
  );
  assert.deepEqual(remove.ran, []);
  assert.deepEqual(write.ran, ["x"]);
  assert.deepEqual(toolResults(result.messages), [
    ["d", "Tool denied by guardrail: never delete"],
    ["w", "write_file(x) done"],
  ]);
});

test("approvalTimeoutMs: an undecided request is rejected, the run goes on", async () => {
  const write = counted("write_file");
  const agent = new Agent({ model: new ScriptedModel([calls(["write_file", { path: "a" }, "w"]), "gave up"]), tools: [write.tool], approvalTimeoutMs: 30 });
  const result = await agent.run("go");
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(write.ran, []);
  assert.deepEqual(toolResults(result.messages), [["w", "Rejected: approval timed out after 30 ms"]]);
});

test("needsApproval as a function of the arguments; abort while waiting cancels", async () => {
  const write = counted("write_file", ({ path }) => path.startsWith("/etc"));
  const agent = new Agent({ model: new ScriptedModel([calls(["write_file", { path: "tmp/a" }, "a"], ["write_file", { path: "/etc/passwd" }, "b"]), "x"]), tools: [write.tool] });
  const run = agent.run("go", {
    onEvent: (event) => {
      if (event.type === "approval-request") queueMicrotask(() => run.abort("user left"));
    },
  });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => event.toolCallId),
    ["b"],
  );
  assert.deepEqual(write.ran, [], "nothing of the wave ran");
  assert.equal(toolResults(result.messages).length, 2, "every call has a result");
});

test("a second approval in a later wave of a streamed run works like the first", async () => {
  const write = counted("write_file");
  const agent = new Agent({
    model: new ScriptedModel([calls(["write_file", { path: "1" }, "first"]), calls(["write_file", { path: "2" }, "second"]), "both written"], { chunkDelayMs: 1 }),
    tools: [write.tool],
  });
  const run = agent.run("go");
  const asked: string[] = [];
  let text = "";
  for await (const event of run) {
    if (event.type === "approval-request") {
      asked.push(event.toolCallId);
      run.approve(event.toolCallId);
    }
    if (event.type === "text-delta") text += event.delta;
  }
  assert.deepEqual(asked, ["first", "second"]);
  assert.deepEqual(write.ran, ["1", "2"]);
  assert.equal(text, "both written");
});

test("interrupt: INTERRUPTED with a JSON checkpoint; resume runs the approved call once, rejects the other, the loop goes on", async () => {
  const write = counted("write_file");
  const read = counted("read_file", false);
  const script = [calls(["write_file", { path: "a" }, "w1"], ["write_file", { path: "b" }, "w2"], ["read_file", { path: "r" }, "r1"]), "finished"];
  const agent = new Agent({ name: "writer", model: new ScriptedModel(script), tools: [write.tool, read.tool], onApproval: "interrupt" });
  const run = agent.run("write");
  const events = await eventsOf(run);
  const first = await run;
  assert.equal(first.state, "INTERRUPTED");
  assert.match(first.reason, /waiting for approval of 2 tool call\(s\): write_file \(w1\), write_file \(w2\)/);
  assert.equal(ofType(events, "approval-request").length, 2);
  assert.deepEqual(write.ran, []);
  assert.deepEqual(read.ran, [], "the wave did not start");
  const checkpoint = JSON.parse(JSON.stringify(first.checkpoint)) as RunCheckpoint;
  assert.deepEqual(
    checkpoint.pending.map((entry) => [entry.toolCallId, entry.toolName, entry.arguments]),
    [
      ["w1", "write_file", { path: "a" }],
      ["w2", "write_file", { path: "b" }],
    ],
  );
  const resumed = agent.resume(checkpoint, { decisions: { w1: { approve: true }, w2: { approve: false, reason: "b is read-only" } } });
  const resumedEvents = await eventsOf(resumed);
  const result = await resumed;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "finished");
  assert.deepEqual(write.ran, ["a"]);
  assert.deepEqual(read.ran, ["r"]);
  assert.deepEqual(toolResults(result.messages), [
    ["w1", "write_file(a) done"],
    ["w2", "Rejected: b is read-only"],
    ["r1", "read_file(r) done"],
  ]);
  assert.equal(result.turns, 2, "counters go on from the checkpoint");
  assert.equal(result.messages[0]?.role, "user");
  assert.deepEqual(
    ofType(resumedEvents, "approval-decision").map((event) => [event.toolCallId, event.approve, event.checkpointId]),
    [
      ["w1", true, checkpoint.id],
      ["w2", false, checkpoint.id],
    ],
  );
  assert.equal(ofType(resumedEvents, "run-start")[0]?.resumedFrom?.checkpointId, checkpoint.id);
});

test("decisions one by one: undecided calls stop the run again with a new checkpoint; each approved call runs once", async () => {
  const write = counted("write_file");
  const agent = new Agent({
    model: new ScriptedModel([calls(["write_file", { path: "a" }, "w1"], ["write_file", { path: "b" }, "w2"]), "done"]),
    tools: [write.tool],
    onApproval: "interrupt",
  });
  const first = await agent.run("go");
  const second = await agent.resume(first.checkpoint!, { decisions: { w1: { approve: true } } });
  assert.equal(second.state, "INTERRUPTED");
  assert.deepEqual(write.ran, [], "the wave waits for every decision");
  assert.notEqual(second.checkpoint!.id, first.checkpoint!.id);
  assert.deepEqual(
    second.checkpoint!.pending.map((entry) => entry.toolCallId),
    ["w2"],
  );
  const third = await agent.resume(second.checkpoint!, { decisions: { w2: { approve: true } } });
  assert.equal(third.state, "COMPLETED");
  assert.deepEqual(write.ran, ["a", "b"]);
});

test("resume refusals: a second resume, changed arguments, a decision for other arguments, an unknown call", async () => {
  const write = counted("write_file");
  const agent = new Agent({ model: new ScriptedModel([calls(["write_file", { path: "a" }, "w1"]), "done"]), tools: [write.tool], onApproval: "interrupt" });
  const { checkpoint } = await agent.run("go");
  assert.ok(checkpoint);
  const text = JSON.stringify(checkpoint);

  const changed = JSON.parse(text) as RunCheckpoint;
  changed.pending[0]!.arguments = { path: "/etc/passwd" };
  assert.throws(() => agent.resume(changed, { decisions: { w1: { approve: true } } }), (error: Error) => {
    assert.ok(error instanceof ResumeError);
    assert.match(error.message, /arguments of tool call "w1" \(write_file\) changed since the approval was requested/);
    return true;
  });
  const changedCall = JSON.parse(text) as RunCheckpoint;
  changedCall.wave.calls[0]!.arguments = '{"path":"/etc/passwd"}';
  assert.throws(() => agent.resume(changedCall, { decisions: { w1: { approve: true } } }), /changed since the approval was requested/);
  assert.throws(
    () => agent.resume(JSON.parse(text), { decisions: { w1: { approve: true, argumentsHash: "0".repeat(32) } } }),
    /decision for "w1" \(write_file\) was made for other arguments/,
  );
  assert.throws(() => agent.resume(JSON.parse(text), { decisions: { nope: { approve: true } } }), /no approval is pending for tool call "nope" \(pending: w1\)/);
  assert.throws(() => agent.resume(JSON.parse(text), { decisions: { w1: { yes: true } as never } }), /must be \{ approve: true \}/);
  assert.throws(() => agent.resume({ hello: 1 } as never, { decisions: {} }), /not a run checkpoint/);
  assert.throws(() => new Agent({ name: "other", model: new ScriptedModel([]) }).resume(JSON.parse(text), { decisions: {} }), /belongs to agent "agent", not "other"/);
  assert.deepEqual(write.ran, [], "nothing ran on a refused resume");

  const argumentsHash = checkpoint.pending[0]!.argumentsHash;
  const result = await agent.resume(JSON.parse(text), { decisions: { w1: { approve: true, argumentsHash } } });
  assert.equal(result.state, "COMPLETED");
  assert.throws(() => agent.resume(JSON.parse(text), { decisions: { w1: { approve: true } } }), /checkpoint ckpt_[0-9a-f-]+ was already resumed/);
  assert.deepEqual(write.ran, ["a"], "executed exactly once");
});

test("sub-agents, wait mode: the child's approval-request surfaces nested in the parent, parent.approve answers it", async () => {
  const write = counted("write_file");
  const child = new Agent({ name: "worker", model: new ScriptedModel([calls(["write_file", { path: "deep" }, "cw"]), "child done"]), tools: [write.tool] });
  const parent = new Agent({ name: "boss", model: new ScriptedModel([calls(["delegate_to_worker", { task: "write it" }, "d1"]), "all done"]), subAgents: [child] });
  const run = parent.run("go");
  for await (const event of run) {
    const request = approvalRequestOf(event);
    if (request) {
      assert.equal(event.type, "nested");
      assert.deepEqual(request.agentPath, ["boss", "worker"]);
      run.approve(request.toolCallId);
    }
  }
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(write.ran, ["deep"]);
});

test("sub-agents, interrupt mode: the parent's checkpoint holds the child's; resume runs the child's call once and the sibling is not re-run", async () => {
  const write = counted("write_file");
  const sibling = counted("read_file", false);
  const child = new Agent({ name: "worker", model: new ScriptedModel([calls(["write_file", { path: "deep" }, "cw"]), "child done"]), tools: [write.tool] });
  const parent = new Agent({
    name: "boss",
    model: new ScriptedModel([calls(["delegate_to_worker", { task: "write it" }, "d1"], ["read_file", { path: "side" }, "r1"]), "all done"]),
    tools: [sibling.tool],
    subAgents: [child],
    onApproval: "interrupt",
  });
  const first = await parent.run("go");
  assert.equal(first.state, "INTERRUPTED");
  assert.deepEqual(
    first.checkpoint!.pending.map((entry) => [entry.toolCallId, entry.agentPath]),
    [["cw", ["boss", "worker"]]],
  );
  assert.deepEqual(sibling.ran, ["side"], "the sibling call ran in the first wave");
  const checkpoint = JSON.parse(JSON.stringify(first.checkpoint));
  const result = await parent.resume(checkpoint, { decisions: { cw: { approve: true } } });
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "all done");
  assert.deepEqual(write.ran, ["deep"]);
  assert.deepEqual(sibling.ran, ["side"], "not run again");
  assert.deepEqual(toolResults(result.messages), [
    ["d1", "child done"],
    ["r1", "read_file(side) done"],
  ]);
});

test("defineTool refuses a needsApproval that is not a boolean or function; onApproval per run overrides the agent's", async () => {
  assert.throws(
    () => defineTool({ name: "x", description: "", parameters: { type: "object" }, needsApproval: "yes" as never, execute: () => "" }),
    /needsApproval must be true, false or a function/,
  );
  const write = counted("write_file");
  const agent = new Agent({ model: new ScriptedModel([calls(["write_file", { path: "a" }, "w"]), "ok"]), tools: [write.tool] });
  const result = await agent.run("go", { onApproval: "interrupt" });
  assert.equal(result.state, "INTERRUPTED");
});

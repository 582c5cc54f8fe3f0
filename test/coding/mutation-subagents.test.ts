// Sub-agents on the paths session.test.ts leaves out: each tool's answer for an unknown id (none
// spawned yet, or the known ones listed), an empty task, send_input to a running and to a closed
// child, a child that fails (its turn limit), the spawn answer without a working folder, ids counted
// on, and the session's close() stopping a running child.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createCodingAgent, Workspace } from "../../src/coding/index.js";
import { ScriptedModel } from "../../src/index.js";
import { calls, eventsOf, ofType } from "../loop/helpers.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-subagents-mutation-");
const workspaceAt = (root: string) => new Workspace({ root, inheritEnv: { PATH: process.env.PATH } });

/** The parent's tool-end events, in order, of a session whose parent follows `script` and whose children follow `child`. */
async function session(script: string[], child: string[]) {
  const childModel = new ScriptedModel(child, { continueAcrossRuns: true });
  const created = await createCodingAgent({ model: new ScriptedModel(script), workspace: workspaceAt(freshRoot()), subagents: { model: childModel } });
  const run = created.agent.run("go");
  const ends = ofType(await eventsOf(run), "tool-end");
  assert.equal((await run).state, "COMPLETED");
  return { ends, created, childModel };
}

describe("sub-agent tools, mutation cases", { concurrency: 3 }, () => {
  it("an unknown id before any spawn says none was spawned; an empty task is refused", async () => {
    const { ends } = await session(
      [
        calls(["wait", { agent_id: "agent_1" }], ["send_input", { agent_id: "x", message: "m" }], ["close_agent", { agent_id: "agent_1" }], ["spawn_agent", { task: "   " }]),
        "ok",
      ],
      [],
    );
    assert.deepEqual(
      ends.map((end) => [end.isError, end.output]).sort(),
      [
        [true, 'wait: No sub-agent "agent_1". None was spawned yet.'],
        [true, 'send_input: No sub-agent "x". None was spawned yet.'],
        [true, 'close_agent: No sub-agent "agent_1". None was spawned yet.'],
        [true, "spawn_agent: task must be a non-empty string"],
      ].sort(),
    );
  });

  it("spawned children are numbered on; the answers name them; an unknown id lists the known ones; a failed child's wait is an error with its reason", async () => {
    const { ends } = await session(
      [
        calls(["spawn_agent", { task: "first", max_turns: 1 }]),
        calls(["spawn_agent", { task: "second" }]),
        calls(["wait", { agent_id: "agent_1" }]),
        calls(["wait", { agent_id: "agent_2" }]),
        calls(["send_input", { agent_id: "agent_3", message: "m" }]),
        calls(["close_agent", { agent_id: "agent_2" }]),
        calls(["send_input", { agent_id: "agent_2", message: "again" }]),
        "ok",
      ],
      // agent_1 asks for a tool in its only model call (max_turns 1): it stops at its turn limit.
      [calls(["glob", { pattern: "*" }]), "second's answer"],
    );
    assert.equal(ends[0].output, 'Spawned agent_1: running. Call wait with agent_id "agent_1" for its answer.');
    assert.equal(ends[1].output, 'Spawned agent_2: running. Call wait with agent_id "agent_2" for its answer.');
    assert.equal(ends[2].isError, true);
    assert.match(ends[2].output, /^agent_1: failed \(TURN_LIMIT, 1 model call\)\nsuccess: false\nturns used: 1\n\n\(no answer: .+\)$/);
    assert.deepEqual(ends[2].structured, { agent_id: "agent_1", success: false, turns_used: 1, state: "TURN_LIMIT" });
    assert.equal(ends[3].isError, false);
    assert.equal(ends[3].output, "agent_2: completed (COMPLETED, 1 model call)\nsuccess: true\nturns used: 1\n\nsecond's answer");
    assert.equal(ends[4].output, 'send_input: No sub-agent "agent_3". Known: agent_1, agent_2.');
    assert.equal(ends[5].output, "Closed agent_2 (it was completed; its run ended COMPLETED).");
    assert.deepEqual([ends[6].isError, ends[6].output], [true, "send_input: agent_2 was closed"]);
  });

  it("send_input to a running child is steered into it; close() of the session stops a running child", async () => {
    const { ends, created, childModel } = await session(
      [calls(["spawn_agent", { task: "sleep" }]), calls(["send_input", { agent_id: "agent_1", message: "hurry up" }]), "ok"],
      [calls(["shell", { command: "sleep 30", timeout_ms: 60_000 }]), "woke up"],
    );
    assert.equal(ends[1].output, "Sent to agent_1 (running): it reads the message after its current step.");
    const started = performance.now();
    await created.close();
    assert.ok(performance.now() - started < 20_000);
    assert.deepEqual(created.subagents?.list(), [{ id: "agent_1", status: "closed" }]);
    // Closed while its command ran: it made no second model call.
    assert.equal(childModel.requests.length, 1);
  });
});

/** A session's parent run with the models and every event of its stream. */
async function sessionEvents(script: string[], child: string[], runOptions: Record<string, unknown> = {}) {
  const parentModel = new ScriptedModel(script);
  const childModel = new ScriptedModel(child, { continueAcrossRuns: true });
  const created = await createCodingAgent({ model: parentModel, workspace: workspaceAt(freshRoot()), subagents: { model: childModel } });
  const run = created.agent.run("go", runOptions);
  const events = await eventsOf(run);
  const result = await run;
  await created.close();
  return { events, ends: ofType(events, "tool-end"), result, parentModel, childModel, created };
}

const toolMessages = (model: ScriptedModel, request: number) =>
  model.requests[request].messages.filter((message) => message.role === "tool").map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content)));

describe("sub-agent tools as the model and the stream see them", () => {
  it("the four tools' definitions sent to the model: descriptions, parameters, what is required, nothing else allowed", async () => {
    const model = new ScriptedModel(["ok"]);
    const created = await createCodingAgent({ model, workspace: workspaceAt(freshRoot()) });
    await created.agent.run("go");
    const names = ["spawn_agent", "send_input", "wait", "close_agent"];
    const sent = (model.requests[0].tools ?? []).filter((tool) => names.includes(tool.name)).map(({ name, description, parameters }) => ({ name, description, parameters }));
    const id = { type: "object", properties: { agent_id: { type: "string" } }, required: ["agent_id"], additionalProperties: false };
    assert.deepEqual(sent, [
      {
        name: "spawn_agent",
        description:
          "Starts a sub-agent on a scoped task. It works in the same files (or in working_dir, a folder of the workspace) with its own conversation, in the background: call wait to get its answer. Returns its agent_id.",
        parameters: {
          type: "object",
          properties: {
            task: { type: "string", description: "The task, stated completely: the sub-agent sees nothing else" },
            working_dir: { type: "string", description: "A folder of the workspace to work in (default: the workspace root)" },
            max_turns: { type: "integer", minimum: 1, description: "Model calls it may make (default 50)" },
          },
          required: ["task"],
          additionalProperties: false,
        },
      },
      {
        name: "send_input",
        description: "Sends a message to a sub-agent: a running one reads it after its current step; a finished one starts working on it, with its history.",
        parameters: { type: "object", properties: { agent_id: { type: "string" }, message: { type: "string" } }, required: ["agent_id", "message"], additionalProperties: false },
      },
      { name: "wait", description: "Waits for a sub-agent to finish and returns its answer, whether it succeeded and the model calls it used.", parameters: id },
      { name: "close_agent", description: "Stops a sub-agent (a running one is aborted) and returns its final status.", parameters: id },
    ]);
  });

  it("progress events: kind agent, spawn_agent and wait are delegations; a long answer reaches the model cut head and tail", async () => {
    const long = `${"a".repeat(15_000)}${"z".repeat(15_000)}`;
    const { events, parentModel } = await sessionEvents(
      [calls(["spawn_agent", { task: "t" }]), calls(["wait", { agent_id: "agent_1" }]), calls(["send_input", { agent_id: "agent_1", message: "m" }]), calls(["close_agent", { agent_id: "agent_1" }]), "ok"],
      [long, "again"],
    );
    assert.deepEqual(
      ofType(events, "tool-start").map((start) => [start.name, start.kind, start.action]),
      [
        ["spawn_agent", "agent", "delegate"],
        ["wait", "agent", "delegate"],
        ["send_input", "agent", "tool_call"],
        ["close_agent", "agent", "tool_call"],
      ],
    );
    const [answer] = toolMessages(parentModel, 2).slice(-1);
    assert.match(answer, /^agent_1: completed \(COMPLETED, 1 model call\)\nsuccess: true\nturns used: 1\n\na{9000}/);
    assert.match(answer.slice(-10_200), /\[agentloop: \d+ characters removed from the output of "wait" \(limit 20000 characters, mode head_tail\);[^\]]*\]\n\nz{10000}$/);
  });

  it("a finished child given more input continues its history without a second system prompt; waiting twice forwards its events once", async () => {
    const { events, childModel } = await sessionEvents(
      [
        calls(["spawn_agent", { task: "first task" }]),
        calls(["wait", { agent_id: "agent_1" }]),
        calls(["wait", { agent_id: "agent_1" }]),
        calls(["send_input", { agent_id: "agent_1", message: "second task" }]),
        calls(["wait", { agent_id: "agent_1" }]),
        "ok",
      ],
      ["first answer", "second answer"],
    );
    const second = childModel.requests[1].messages;
    assert.deepEqual(
      second.map((message) => message.role),
      ["system", "user", "assistant", "user"],
    );
    // Each of the child's two runs reached the parent's stream once, from its start to its end.
    const nested = ofType(events, "nested").filter((event) => event.agent === "agent_1").map((event) => event.event.type);
    assert.equal(nested.filter((type) => type === "run-start").length, 2);
    assert.equal(nested[0], "run-start");
    assert.equal(nested.filter((type) => type === "run-end").length, 2);
  });

  it("a closed child's wait is not a success even when its run completed", async () => {
    const { ends } = await sessionEvents(
      [calls(["spawn_agent", { task: "t" }]), calls(["wait", { agent_id: "agent_1" }]), calls(["close_agent", { agent_id: "agent_1" }]), calls(["wait", { agent_id: "agent_1" }]), "ok"],
      ["done"],
    );
    assert.equal(ends[3].isError, true);
    assert.equal(ends[3].output, "agent_1: closed (COMPLETED, 1 model call)\nsuccess: false\nturns used: 1\n\ndone");
  });

  it("close_agent on a running child aborts it: its wait says it was closed", async () => {
    const { ends } = await sessionEvents(
      [calls(["spawn_agent", { task: "sleep" }]), calls(["close_agent", { agent_id: "agent_1" }]), calls(["wait", { agent_id: "agent_1" }]), "ok"],
      [calls(["shell", { command: "sleep 30", timeout_ms: 60_000 }]), "woke up"],
    );
    assert.match(ends[1].output, /^Closed agent_1 \(it was running; its run ended ABORTED\)\.$/);
    assert.match(ends[2].output, /^agent_1: closed \(ABORTED, 1 model call\)\nsuccess: false\nturns used: 1\n\n\(no answer: .*closed by close_agent.*\)$/s);
  });

  it("a session run as a delegate at the maximum depth is refused a sub-agent, and the next id is still agent_1", async () => {
    const { ends } = await sessionEvents([calls(["spawn_agent", { task: "t" }]), "ok"], [], { depth: 1, agentPath: ["boss"] });
    assert.equal(ends[0].isError, true);
    assert.equal(ends[0].output, 'Delegation refused: "agent_1" would run at depth 2, beyond the maximum delegation depth of 1 (path: boss > coder).');
  });

  it("the parent's abort stops its running sub-agents", async () => {
    const parentModel = new ScriptedModel([calls(["spawn_agent", { task: "sleep" }]), calls(["wait", { agent_id: "agent_1" }]), "ok"]);
    const childModel = new ScriptedModel([calls(["shell", { command: "sleep 30", timeout_ms: 60_000 }]), "woke up"]);
    const created = await createCodingAgent({ model: parentModel, workspace: workspaceAt(freshRoot()), subagents: { model: childModel } });
    const controller = new AbortController();
    const run = created.agent.run("go", { signal: controller.signal });
    const started = performance.now();
    for await (const event of run) {
      // The child's command started: abort the parent.
      if (event.type === "nested" && event.event.type === "tool-start") controller.abort("the user stopped");
    }
    assert.equal((await run).state, "ABORTED");
    assert.ok(performance.now() - started < 20_000);
    // The child was stopped by the parent's abort, not by close(): it ended before close() was called.
    assert.deepEqual(created.subagents?.list(), [{ id: "agent_1", status: "failed" }]);
    await created.close();
    assert.equal(childModel.requests.length, 1);
  });
});

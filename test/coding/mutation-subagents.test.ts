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

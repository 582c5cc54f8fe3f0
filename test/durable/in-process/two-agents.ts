// Two durable agents in one process (src/durable/agent.ts, cancellation.ts): while a run of one
// executes here, the other neither sees it (`exists`) nor cancels or resumes it, nor starts a run
// under its id; the run goes on.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { durableAgent } from "../../../src/durable/index.js";
import { Agent, defineTool, ScriptedModel } from "../../../src/index.js";
import { shared } from "./shared.js";

let inTool: (() => void) | undefined;
let release: (() => void) | undefined;
const gate = defineTool({
  name: "gate",
  description: "ends when released",
  parameters: { type: "object" },
  execute: () =>
    new Promise<string>((resolve) => {
      release = () => resolve("opened");
      inTool?.();
    }),
});
const gated = JSON.stringify({ tool_calls: [{ id: "g1", name: "gate", arguments: {} }] });
const keeper = durableAgent(new Agent({ name: "two-keeper", model: new ScriptedModel([gated, "Kept."]), tools: [gate] }), shared);
const stranger = durableAgent(new Agent({ name: "two-stranger", model: new ScriptedModel(["hi"]) }), shared);

test("a run executing here is its agent's only: another durable agent does not see it, cannot cancel or resume it, and it goes on", { timeout: 60_000 }, async () => {
  const runId = `run_two_agents_${randomUUID().slice(0, 8)}`;
  const started = new Promise<void>((resolve) => {
    inTool = resolve;
  });
  const run = await keeper.run("keep", { runId });
  await started;
  assert.equal(await keeper.exists(runId), true);
  assert.equal(await stranger.exists(runId), false, "another agent's run executing here");
  await assert.rejects(stranger.cancel(runId), { message: `durable cancel: no run "${runId}" of agent "two-stranger"` });
  await assert.rejects(stranger.resume(runId), { message: `durable resume: no run "${runId}" of agent "two-stranger"` });
  // A run of the other agent under this run's id is refused (DBOS: one workflow per id), and is no run of its.
  await assert.rejects(stranger.run("hi", { runId, onEvent: () => assert.fail("no event of a refused run") }), (error: Error) => error.message.startsWith(`Conflicting workflow invocation with the same ID (${runId})`));
  release!();
  const result = await run.result();
  assert.deepEqual([result.state, result.text], ["COMPLETED", "Kept."]);
  assert.equal(await stranger.exists(runId), false, "nor once it finished");
  const unknown = `run_unknown_${randomUUID().slice(0, 8)}`;
  await assert.rejects(keeper.cancel(unknown), { message: `durable cancel: no run "${unknown}" of agent "two-keeper"` });
});

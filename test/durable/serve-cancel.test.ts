// `agentloop runs cancel` of a durable run that is running (a real `serve` replica, real PostgreSQL):
// the tool call in flight is aborted (DBOS's step cancel signal, within about a second) and the run
// stops at its loop's next checkpoint (the model is not called again), its client's stream ends cleanly with the cancellation and `[DONE]`, a client that
// reattaches gets the same end, and the run stays CANCELLED.
import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli } from "../cli/helpers.js";
import { durableTestResources } from "./cleanup.js";
import { postChat, readEvents, startReplica } from "./serve-helpers.js";

const { tag, replicas, durableEnv } = durableTestResources("t_durable_cancel", "dbos_cancel");


test("cancelling a running durable run aborts the tool call in flight and stops the run; its stream and a reattached one end cleanly", async () => {
  // WORK_MS longer than the test: the cancel stops the tool in flight.
  const replica = await startReplica(durableEnv(`cancel-${tag}`, { WORK_MS: "60000" }));
  replicas.push(replica);
  const chat = await postChat(replica.url, "a long task", `cancel-${tag}`);
  const runId = chat.headers.get("x-agentloop-run-id")!;
  let inTool!: () => void;
  const toolStarted = new Promise<void>((resolve) => {
    inTool = resolve;
  });
  const reading = readEvents(chat, (event) => {
    if (event.includes("progress")) inTool();
  });
  await toolStarted;

  const cancelled = await runCli(["runs", "cancel", runId, "--url", replica.url], { ...process.env, NO_COLOR: "1" });
  assert.equal(cancelled.code, 0, cancelled.stderr);
  const { events, complete } = await reading;
  assert.ok(complete, events.join("\n"));
  // No answer: the model was not called after the tool call the run was in.
  assert.ok(!events.some((event) => event.includes("Done:")), events.join("\n"));
  const error = JSON.parse(events.at(-2)!) as { error: { message: string; code: string } };
  assert.equal(error.error.code, "aborted");
  assert.match(error.error.message, new RegExp(`run ${runId} was cancelled`));

  const reattached = await readEvents(await fetch(`${replica.url}/v1/runs/${runId}/events`));
  assert.ok(reattached.complete, reattached.events.join("\n"));
  assert.ok(!reattached.events.some((event) => event.includes("Done:")));
  const shown = (await (await fetch(`${replica.url}/v1/runs/${runId}`)).json()) as { status: string; steps: Array<{ name: string }> };
  assert.equal(shown.status, "CANCELLED");
  // history, model, (the tool call's result is not recorded: the step found the run cancelled), no second model call.
  const steps = shown.steps.map((step) => step.name).filter((name) => !name.startsWith("DBOS."));
  assert.deepEqual(steps.slice(0, 2), ["history", "model"]);
  assert.deepEqual(
    steps.filter((name) => name === "model"),
    ["model"],
  );
});

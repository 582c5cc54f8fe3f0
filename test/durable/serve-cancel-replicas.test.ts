// Cancel means stop, across replicas (real `serve` replicas, real PostgreSQL): a run executing a
// tool that would take 30 s on one replica is cancelled through the other; the tool call is
// aborted and the run's stream ends within DBOS's cancel poll: the running replica learns of a cancel
// by polling for it every second (its dbPollingIntervalCancelMs, fixed), so the stop comes 0–1 s after
// the cancel plus the requests' time (271 ms measured on a quiet machine; 1,028 ms at load 14): the
// bound, 3 s, is that second with room for a loaded machine, a tenth of the 30 s the tool would take.
import assert from "node:assert/strict";
import { test } from "node:test";
import { durableTestResources } from "./cleanup.js";
import { postChat, readEvents, startReplica } from "./serve-helpers.js";

const { tag, replicas, durableEnv } = durableTestResources("t_durable_cancel_x", "dbos_cancel_x_serve");

test("a cancel sent to another replica stops a 30 s tool within DBOS's cancel poll (1 s; bound 3 s)", async () => {
  const running = await startReplica(durableEnv(`run-${tag}`, { WORK_MS: "30000" }));
  replicas.push(running);
  const chat = await postChat(running.url, "a long task", `cancel-x-${tag}`);
  const runId = chat.headers.get("x-agentloop-run-id")!;
  let inTool!: () => void;
  const toolStarted = new Promise<void>((resolve) => {
    inTool = resolve;
  });
  let ended = 0;
  const reading = readEvents(chat, (event) => {
    if (event.includes("progress")) inTool();
    if (event === "[DONE]") ended = performance.now();
  });
  const other = await startReplica(durableEnv(`other-${tag}`, { WORK_MS: "30000" }));
  replicas.push(other);
  await toolStarted;
  const sent = performance.now();
  const cancelled = await fetch(`${other.url}/v1/runs/${runId}/cancel`, { method: "POST" });
  assert.equal(cancelled.status, 200, await cancelled.clone().text());
  const { events, complete } = await reading;
  const stoppedMs = (ended || performance.now()) - sent;
  assert.ok(complete, events.join("\n"));
  assert.ok(!events.some((event) => event.includes("Done:")), events.join("\n"));
  assert.equal((JSON.parse(events.at(-2)!) as { error: { code: string } }).error.code, "aborted");
  console.log(`# cancel across replicas: stream ended ${Math.round(stoppedMs)} ms after the cancel was sent`);
  assert.ok(stoppedMs < 3000, `the run stopped ${Math.round(stoppedMs)} ms after the cancel (a 30 s tool)`);
});

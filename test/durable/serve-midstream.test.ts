// A durable `serve` replica killed (SIGKILL) in the middle of a model call, while its client is
// receiving the answer's deltas (real processes, real PostgreSQL). The restarted replica (same
// executor id) calls the model again; the client reattaches with ?after=<events received> and the
// text it ends with is the answer once: no delta repeated, none lost, and the memory records it once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { durableTestResources } from "./cleanup.js";
import { answerOf, postChat, readEvents, startReplica } from "./serve-helpers.js";

const { tag, replicas, durableEnv } = durableTestResources("t_durable_midstream", "dbos_midstream");

const env = durableEnv(`midstream-${tag}`, { WORK_MS: "0", ANSWER_WORDS: "12", DELTA_MS: "40" });

test("a replica killed in the middle of a model call: the reattached client gets the rest of the answer, nothing twice", async () => {
  const first = await startReplica(env);
  replicas.push(first);
  const session = `mid-${tag}`;
  const chat = await postChat(first.url, "a long answer", session);
  const runId = chat.headers.get("x-agentloop-run-id")!;
  let deltas = 0;
  let midway!: () => void;
  const inAnswer = new Promise<void>((resolve) => {
    midway = resolve;
  });
  const reading = readEvents(chat, (event) => {
    if (event.includes('"content":"') && !event.includes("progress") && ++deltas === 4) midway();
  });
  await inAnswer;
  first.child.kill("SIGKILL");
  const cut = await reading;
  assert.equal(cut.complete, false);
  const answer = `Done: worked on a long answer.${Array.from({ length: 12 }, (_, index) => ` w${index + 1}`).join("")}`;
  // Killed in the middle of the answer: the client holds a part of it.
  const partial = answerOf(cut.events);
  assert.ok(partial.length > 0 && partial.length < answer.length && answer.startsWith(partial), partial);

  const restarted = await startReplica(env);
  replicas.push(restarted);
  const rest = await readEvents(await fetch(`${restarted.url}/v1/runs/${runId}/events?after=${cut.events.length}`));
  assert.ok(rest.complete, rest.events.join("\n"));
  assert.equal(answerOf([...cut.events, ...rest.events]), answer);

  // The memory holds the answer once (the first execution never finished its model call).
  const memory = (await (await fetch(`${restarted.url}/memory/events?session_id=${session}`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
  const responses = memory.events.filter((event) => event.event_type === "agent_response");
  assert.equal(responses.length, 1, JSON.stringify(memory.events));
});

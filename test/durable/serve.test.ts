// `serve` in durable mode against the plain server (real processes, real PostgreSQL): the same
// stream bytes and memory events, a client that disconnects reattaches and loses/repeats nothing, a
// replica killed mid-run finishes its run when it restarts with its executor id, the run routes and
// `agentloop runs`, and the configuration errors.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { runCli } from "../cli/helpers.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { durableTestResources } from "./cleanup.js";
import { answerOf, chatBody, postChat, type Replica, readEvents, startReplica } from "./serve-helpers.js";

// The durable replica's memory and DBOS schemas first (durableEnv), the plain one's memory last.
const { tag, schemas, replicas: started, durableEnv } = durableTestResources("t_durable_serve", "dbos_serve", "t_durable_serve_plain");
const executor = `serve-${tag}`;
let plain: Replica;
let durable: Replica;

const envOf = (durableMode: boolean) =>
  durableMode
    ? durableEnv(executor, { WORK_MS: "300" })
    : { AGENT_NAME: "durable", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: schemas[2]!, WORK_MS: "300" };

before(async () => {
  [plain, durable] = await Promise.all([startReplica(envOf(false)), startReplica(envOf(true))]);
  started.push(plain, durable);
});


/** The stream's text with what differs by nature between two runs (the chunk id, the time) made equal. */
const normalize = (text: string) => text.replace(/"id":"chatcmpl-[^"]+"/g, '"id":"chatcmpl-X"').replace(/"created":\d+/g, '"created":0');

async function streamText(url: string, sessionId: string): Promise<{ text: string; headers: Headers }> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "durable", messages: [{ role: "user", content: "the same task" }], stream: true, stream_options: { include_usage: true }, session_id: sessionId }),
  });
  assert.equal(response.status, 200);
  return { text: await response.text(), headers: response.headers };
}

test("a durable server sends the same stream bytes and records the same memory events as the plain one", async () => {
  const [fromPlain, fromDurable] = await Promise.all([streamText(plain.url, `same-${tag}`), streamText(durable.url, `same-${tag}`)]);
  const runId = fromDurable.headers.get("x-agentloop-run-id");
  assert.match(runId ?? "", /^run_/);
  assert.equal(fromPlain.headers.get("x-agentloop-run-id"), null);
  // The run id is in the first chunk (and every chunk): the chunks' id.
  assert.ok(fromDurable.text.startsWith(`data: {"id":"chatcmpl-${runId}"`), fromDurable.text.slice(0, 120));
  assert.match(fromPlain.text, /"type\\":\\"progress\\"/);
  assert.equal(normalize(fromDurable.text), normalize(fromPlain.text));

  const eventsOf = async (url: string) => {
    const body = (await (await fetch(`${url}/memory/events?session_id=same-${tag}`)).json()) as { events: Array<{ event_type: string; content: unknown; metadata: Record<string, unknown> }> };
    return body.events.map(({ event_type, content, metadata }) => {
      const { run_id: _run, session_id: _session, duration_ms: _duration, ...rest } = metadata;
      // A model call's timing differs between any two runs; what it was (turn, finish, usage) is compared.
      if (rest.model_call && typeof rest.model_call === "object") {
        const { started_at: _started, duration_ms: _took, ...call } = rest.model_call as Record<string, unknown>;
        rest.model_call = call;
      }
      return { event_type, content, metadata: rest };
    });
  };
  assert.deepEqual(await eventsOf(durable.url), await eventsOf(plain.url));

  // A KAOS task delegation records its task first, in both.
  const delegate = (url: string) =>
    fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "task-delegation", content: "delegated task" }], session_id: `delegated-${tag}` }) });
  const [plainDelegated, durableDelegated] = await Promise.all([delegate(plain.url), delegate(durable.url)]);
  assert.equal(durableDelegated.status, 200, await durableDelegated.clone().text());
  await Promise.all([plainDelegated.text(), durableDelegated.text()]);
  const delegatedOf = async (url: string) =>
    ((await (await fetch(`${url}/memory/events?session_id=delegated-${tag}`)).json()) as { events: Array<{ event_type: string; content: unknown }> }).events.map(({ event_type, content }) => ({ event_type, content }));
  const delegatedEvents = await delegatedOf(durable.url);
  assert.deepEqual(delegatedEvents[0], { event_type: "task_delegation_received", content: "delegated task" });
  assert.deepEqual(delegatedEvents, await delegatedOf(plain.url));

  // Not streamed: the same completion (its id and time aside), and the run id in the header.
  const complete = async (url: string) => {
    const response = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "again" }], session_id: `json-${tag}` }) });
    return { body: normalize(await response.text()), runId: response.headers.get("x-agentloop-run-id") };
  };
  const [plainJson, durableJson] = await Promise.all([complete(plain.url), complete(durable.url)]);
  assert.equal(durableJson.body.replace(/"id":"chatcmpl-[^"]+"/, ""), plainJson.body.replace(/"id":"chatcmpl-[^"]+"/, ""));
  assert.match(durableJson.runId ?? "", /^run_/);
});

test("a client that disconnects mid-stream reattaches with ?after=<events received>: nothing lost, nothing repeated", async () => {
  const response = await postChat(durable.url, "reattach me", `reattach-${tag}`);
  const runId = response.headers.get("x-agentloop-run-id")!;
  // Read up to the progress block (the tool is running), then drop the connection.
  const reader = response.body!.getReader();
  let received = "";
  while (!received.includes("progress")) received += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  const before = received.split("\n\n").filter((block) => block.startsWith("data: "));
  const rest = await readEvents(await fetch(`${durable.url}/v1/runs/${runId}/events?after=${before.length}`));
  assert.ok(rest.complete);
  const whole = await readEvents(await fetch(`${durable.url}/v1/runs/${runId}/events`));
  assert.deepEqual([...before.map((block) => block.slice(6)), ...rest.events], whole.events);
  assert.equal(answerOf(whole.events), "Done: worked on reattach me.");
  // Last-Event-ID works as ?after=, and each event carries its id.
  const tail = await fetch(`${durable.url}/v1/runs/${runId}/events`, { headers: { "last-event-id": String(whole.events.length - 1) } });
  assert.equal(await tail.text(), `id: ${whole.events.length}\ndata: [DONE]\n\n`);
});

test("the run routes and `agentloop runs`: list, show, errors; a plain server has no durable runs", async () => {
  const listed = await runCli(["runs", "list", "--url", durable.url, "--session", `same-${tag}`, "--json"], process.env);
  assert.equal(listed.code, 0, listed.stderr);
  const [run] = (JSON.parse(listed.stdout) as { runs: Array<{ runId: string; status: string; sessionId: string; input: string }> }).runs;
  assert.equal(run?.status, "SUCCESS");
  assert.equal(run?.input, "the same task");
  const shown = await runCli(["runs", "show", run!.runId, "--url", durable.url], { ...process.env, NO_COLOR: "1" });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /SUCCESS COMPLETED/);
  assert.match(shown.stdout, /steps: 0:DBOS\.writeStream, \d+:history, \d+:model, .*tool:work/);

  const missing = await runCli(["runs", "show", "run_nope", "--url", durable.url], process.env);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /404 no durable run "run_nope"/);
  const badAfter = await fetch(`${durable.url}/v1/runs/${run!.runId}/events?after=-1`);
  assert.equal(badAfter.status, 400);
  assert.match(await badAfter.text(), /after must be a non-negative integer/);
  const finished = await fetch(`${durable.url}/v1/runs/${run!.runId}/resume`, { method: "POST" });
  assert.equal(finished.status, 409);
  const recoverNothing = await fetch(`${durable.url}/v1/runs/recover`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
  assert.equal(recoverNothing.status, 400);
  assert.match(await recoverNothing.text(), /executor_id must be an executor id/);
  // A NUL reached DBOS's query on PostgreSQL, which failed: a 500. Every hostile id: test/server/hostile-ids.test.ts.
  const recoverNul = await fetch(`${durable.url}/v1/runs/recover`, { method: "POST", body: JSON.stringify({ executor_id: "replica\u00000" }), headers: { "content-type": "application/json" } });
  assert.equal(recoverNul.status, 400);
  assert.match(await recoverNul.text(), /executor_id must be an executor id .*without control characters/);
  const off = await fetch(`${plain.url}/v1/runs`);
  assert.equal(off.status, 404);
  assert.match(await off.text(), /durable runs are off on this server \(DURABLE=true turns them on\)/);
  const unreachable = await runCli(["runs", "list", "--url", "http://127.0.0.1:9"], process.env);
  assert.equal(unreachable.code, 2);
  assert.match(unreachable.stderr, /cannot reach the server at http:\/\/127\.0\.0\.1:9\/v1\/runs/);
});

test("DURABLE=true without MEMORY_TYPE=postgres: `agentloop serve` exits naming the problem", async () => {
  const result = await runCli(["serve"], { ...process.env, DURABLE: "true", MEMORY_TYPE: "memory", AGENT_PORT: "0", DEBUG_MOCK_RESPONSES: '["hi"]' });
  assert.equal(result.code, 2, result.stderr);
  assert.match(result.stderr, /DURABLE: durable runs need MEMORY_TYPE=postgres .*got MEMORY_TYPE=memory/);
  const bad = await runCli(["serve"], { ...process.env, DURABLE: "maybe", AGENT_PORT: "0", DEBUG_MOCK_RESPONSES: '["hi"]' });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /DURABLE: must be true or false, got "maybe"/);
});

test("a replica killed mid-run finishes the run when it restarts with the same executor id; the client reattaches", async () => {
  const response = await fetch(`${durable.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody("survive", `restart-${tag}`) });
  const runId = response.headers.get("x-agentloop-run-id")!;
  let markRunning!: () => void;
  const running = new Promise<void>((resolve) => {
    markRunning = resolve;
  });
  const first = readEvents(response, (event) => event.includes("progress") && markRunning());
  await running;
  durable.child.kill("SIGKILL");
  const cut = await first;
  assert.equal(cut.complete, false);
  const restarted = await startReplica(envOf(true));
  started.push(restarted);
  durable = restarted;
  const rest = await readEvents(await fetch(`${restarted.url}/v1/runs/${runId}/events?after=${cut.events.length}`));
  assert.ok(rest.complete, rest.events.join("\n"));
  assert.equal(answerOf([...cut.events, ...rest.events]), "Done: worked on survive.");
  const memory = (await (await fetch(`${restarted.url}/memory/events?session_id=restart-${tag}`)).json()) as { events: Array<{ event_type: string }> };
  assert.deepEqual(
    memory.events.map((event) => event.event_type),
    ["run_started", "user_message", "tool_call", "tool_result", "agent_response", "run_ended"],
  );
});

test("cancel stops a queued run and `agentloop runs resume` runs it; a reattached client gets its whole stream", async () => {
  // The session's first run holds the session (its tool call takes 300 ms): the second one waits on the queue.
  const running = await postChat(durable.url, "first", `cancel-${tag}`);
  const queued = await postChat(durable.url, "cancel me", `cancel-${tag}`);
  const runId = queued.headers.get("x-agentloop-run-id")!;
  const cancelled = await fetch(`${durable.url}/v1/runs/${runId}/cancel`, { method: "POST" });
  assert.equal(((await cancelled.json()) as { status: string }).status, "CANCELLED");
  // Its stream ends cleanly with the cancellation: the run never started.
  const ended = await readEvents(queued);
  assert.ok(ended.complete, ended.events.join("\n"));
  assert.match(ended.events[0] ?? "", new RegExp(`"message":"run ${runId} was cancelled"`));
  assert.ok((await readEvents(running)).complete);
  const resumed = await runCli(["runs", "resume", runId, "--url", durable.url], { ...process.env, NO_COLOR: "1" });
  assert.equal(resumed.code, 0, resumed.stderr);
  const whole = await readEvents(await fetch(`${durable.url}/v1/runs/${runId}/events`));
  assert.ok(whole.complete, whole.events.join("\n"));
  assert.equal(answerOf(whole.events), "Done: worked on cancel me.");
});

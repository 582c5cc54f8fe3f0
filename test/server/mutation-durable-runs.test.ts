// The durable mode's routes in this process (src/server/routes/runs.ts, durable-runs.ts), as a client
// sees them on the wire: the chat's run id and journal, the reattach route's ids and `after`, the
// list/show/cancel/resume/recover routes and their refusals, the approvals of a durable run. One
// durable server (DBOS on the test PostgreSQL) for the file; the replica tests (test/durable/serve*)
// test the same routes across processes.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { defineTool } from "../../src/index.js";
import { asyncCleanupModel, type Plan } from "../durable/models.js";
import { answerOf, readEvents } from "../durable/serve-helpers.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { createAgentServer } from "../../src/server/index.js";
import type { AgentLoopError } from "../../src/errors.js";
import { postJson, script, startTestServer, type TestServer } from "./helpers.js";

const tag = randomUUID().slice(0, 8);
const schemas = [`t_mut_durable_${tag}`, `dbos_mut_durable_${tag}`, `t_mut_durable_late_${tag}`];
const executor = `mut-durable-${tag}`;
let server: TestServer;

// "pay <n>" asks for `pay` (needs approval), "hold" calls `hold` (waits until its run is aborted),
// anything else is answered "Done: <input>."; after a tool's result, "Done: <result>.".
const plan: Plan = (messages) => {
  const last = messages.at(-1);
  const asked = messages.findLast((message) => message.role === "user");
  const input = typeof asked?.content === "string" ? asked.content : "";
  // "pay <n> then <m>": a second call needing approval once the first one's result is in.
  const then = /^pay \d+ then (\d+)/.exec(input);
  if (last?.role === "tool" && then && !messages.some((message) => message.role === "tool" && message.toolCallId === "call_pay_2")) {
    return { calls: [{ id: "call_pay_2", name: "pay", arguments: { amount: Number(then[1]) } }] };
  }
  // "pay 5 then hold": `hold` once the payment is in.
  if (last?.role === "tool" && input === "pay 5 then hold" && !messages.some((message) => message.role === "tool" && message.toolCallId === "call_hold")) {
    return { calls: [{ id: "call_hold", name: "hold", arguments: {} }] };
  }
  if (last?.role === "tool") return { text: `Done: ${typeof last.content === "string" ? last.content : "?"}.` };
  // "pay both": two calls needing approval in one wave.
  if (input === "pay both") {
    return {
      calls: [
        { id: "call_a", name: "pay", arguments: { amount: 1 } },
        { id: "call_b", name: "pay", arguments: { amount: 2 } },
      ],
    };
  }
  const pay = /^pay (\d+)/.exec(input);
  if (pay) return { calls: [{ id: "call_pay", name: "pay", arguments: { amount: Number(pay[1]) } }] };
  if (input === "hold") return { calls: [{ id: "call_hold", name: "hold", arguments: {} }] };
  if (input === "deaf") return { calls: [{ id: "call_deaf", name: "deaf", arguments: {} }] };
  // What the model was given: the session's history too.
  if (input === "count") return { text: `Done: ${messages.filter((message) => message.role === "user").length} user messages.` };
  return { text: `Done: ${input}.` };
};

let holding: () => void = () => undefined;
/** Set: `hold` answers "released" once this settles (a cancelled run resumed). */
let released: Promise<void> | undefined;
const hold = defineTool<Record<string, never>>({
  name: "hold",
  description: "Holds its session until its run is aborted",
  parameters: { type: "object", properties: {} },
  idempotent: true,
  execute: (_args, context) =>
    new Promise<string>((resolve, reject) => {
      if (released) {
        holding();
        return void released.then(() => resolve("released"));
      }
      holding();
      context.signal.addEventListener("abort", () => reject(new Error("aborted")));
    }),
});
let deafEntered: () => void = () => undefined;
let deafRelease: () => void = () => undefined;
let deafReleased = false;
/** `deaf` ignores its abort signal: it answers "heard" only once `deafRelease()` is called. */
const deaf = defineTool<Record<string, never>>({
  name: "deaf",
  description: "Ignores its abort signal until released",
  parameters: { type: "object", properties: {} },
  idempotent: true,
  execute: () =>
    new Promise<string>((resolve) => {
      deafEntered();
      if (deafReleased) return resolve("heard");
      deafRelease = () => {
        deafReleased = true;
        resolve("heard");
      };
    }),
});
const pay = defineTool<{ amount: number }>({
  name: "pay",
  description: "Pays an amount",
  parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  needsApproval: true,
  execute: async ({ amount }) => `paid ${amount}`,
});

before(async () => {
  server = await startTestServer(
    {
      AGENT_NAME: "durable-routes",
      MEMORY_TYPE: "postgres",
      MEMORY_POSTGRES_URL: postgresUrl(),
      MEMORY_POSTGRES_SCHEMA: schemas[0],
      DURABLE: "true",
      DURABLE_SCHEMA: schemas[1],
      DURABLE_EXECUTOR_ID: executor,
    },
    { build: { model: asyncCleanupModel(plan, { asyncCleanup: false }), tools: [hold, pay, deaf] } },
  );
  assert.equal((await server.server.ready()).status, "ready");
});

after(async () => {
  await server?.server.close({ graceMs: 0 });
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

const session = () => `s-${randomUUID().slice(0, 8)}`;
const chat = (content: string, sessionId: string, extra: object = {}) =>
  postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content }], session_id: sessionId, stream: true, ...extra });
const get = (path: string, headers: Record<string, string> = {}, signal?: AbortSignal) => fetch(`${server.url}${path}`, { headers, signal });
const post = (path: string, body?: unknown) => postJson(`${server.url}${path}`, body ?? {});
/** A refusal's status and error body. */
async function refusal(response: Response): Promise<{ status: number; error: { message: string; code: string; param?: string; type: string } }> {
  return { status: response.status, error: ((await response.json()) as { error: { message: string; code: string; param?: string; type: string } }).error };
}
/** A run's status once it is no longer queued or running (its stream's `[DONE]` comes before DBOS records its end). */
async function finished(runId: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { status } = (await (await get(`/v1/runs/${runId}`)).json()) as { status: string };
    if ((status !== "PENDING" && status !== "ENQUEUED") || Date.now() > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
/** Reads an SSE body as `readEvents` does, first checking its raw text: a chat's stream numbers no event (`id:` lines are the reattach route's). */
async function unnumbered(response: Response): Promise<Awaited<ReturnType<typeof readEvents>>> {
  const text = await response.text();
  assert.doesNotMatch(text, /^id: /m, text.slice(0, 300));
  return readEvents(new Response(text));
}
/** The SSE blocks of a body (`id: <seq>` lines kept). */
const blocks = (text: string) => text.split("\n\n").filter(Boolean);

test("a streamed durable chat: its run id in the header and the chunks' id; the reattach route numbers the events and starts after `after` or Last-Event-ID", async () => {
  const sessionId = session();
  const response = await chat("hello", sessionId);
  assert.equal(response.status, 200);
  const runId = response.headers.get("x-agentloop-run-id")!;
  assert.match(runId, /^run_[0-9a-f-]{36}$/);
  assert.equal(response.headers.get("x-session-id"), sessionId);
  assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
  const streamed = await unnumbered(response);
  assert.ok(streamed.complete, streamed.events.join("\n"));
  assert.ok(streamed.events[0]!.startsWith(`{"id":"chatcmpl-${runId}"`), streamed.events[0]);
  assert.equal(answerOf(streamed.events), "Done: hello.");
  // A plain (not structured) answer streams as the model's deltas come.
  const deltas = streamed.events.flatMap((event) => (event.startsWith("{") ? [(JSON.parse(event) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content] : []));
  assert.deepEqual(
    deltas.filter((content) => content),
    ["Done: ", "hello."],
  );

  const whole = await get(`/v1/runs/${runId}/events`);
  assert.equal(whole.status, 200);
  assert.equal(whole.headers.get("x-agentloop-run-id"), runId);
  assert.equal(whole.headers.get("cache-control"), "no-cache");
  assert.match(whole.headers.get("content-type") ?? "", /^text\/event-stream/);
  const numbered = blocks(await whole.text());
  assert.deepEqual(
    numbered.map((block) => block.split("\n")[0]),
    streamed.events.map((_, index) => `id: ${index + 1}`),
  );
  assert.deepEqual(
    numbered.map((block) => block.slice(block.indexOf("\n") + 1)),
    streamed.events.map((event) => `data: ${event}`),
  );

  const rest = blocks(await (await get(`/v1/runs/${runId}/events?after=2`)).text());
  assert.deepEqual(rest, numbered.slice(2));
  const byHeader = blocks(await (await get(`/v1/runs/${runId}/events`, { "last-event-id": "3" })).text());
  assert.deepEqual(byHeader, numbered.slice(3));
  // `after` wins over the header; an empty `after` is no `after`.
  assert.deepEqual(blocks(await (await get(`/v1/runs/${runId}/events?after=1`, { "last-event-id": "3" })).text()), numbered.slice(1));
  assert.deepEqual(blocks(await (await get(`/v1/runs/${runId}/events?after=`, { "last-event-id": "3" })).text()), numbered.slice(3));

  const badAfter = await refusal(await get(`/v1/runs/${runId}/events?after=1.5`));
  assert.equal(badAfter.status, 400);
  assert.equal(badAfter.error.param, "after");
  assert.equal(badAfter.error.code, "invalid_after");
  assert.equal(badAfter.error.message, 'after must be a non-negative integer (the seq of the last event received), got "1.5"');
  const badHeader = await refusal(await get(`/v1/runs/${runId}/events`, { "last-event-id": "x1" }));
  assert.equal(badHeader.status, 400);
  assert.equal(badHeader.error.param, "Last-Event-ID");
  assert.match(badHeader.error.message, /^Last-Event-ID must be a non-negative integer .*got "x1"$/);

  const unknown = await refusal(await get("/v1/runs/run_nope/events"));
  assert.deepEqual([unknown.status, unknown.error.code, unknown.error.param, unknown.error.message], [404, "run_not_found", "run_id", 'no durable run "run_nope"']);
  const badId = await refusal(await get(`/v1/runs/${"r".repeat(201)}`));
  assert.deepEqual([badId.status, badId.error.code, badId.error.param], [400, "invalid_run_id", "run_id"]);
  assert.equal((await get(`/v1/runs/${"r".repeat(200)}`)).status, 404);
  assert.equal((await get("/v1/runs/a.b_c:d-e")).status, 404);
});

test("a durable chat answered as JSON, on node:http and through AgentServer.fetch: the completion, the session and run ids", async () => {
  const sessionId = session();
  const response = await postJson(`${server.url}/v1/chat/completions`, { model: "m", messages: [{ role: "user", content: "json please" }], session_id: sessionId });
  assert.equal(response.status, 200);
  const runId = response.headers.get("x-agentloop-run-id")!;
  assert.match(runId, /^run_/);
  assert.equal(response.headers.get("x-session-id"), sessionId);
  const body = (await response.json()) as { id: string; object: string; choices: Array<{ message: { content: string }; finish_reason: string }> };
  assert.equal(body.object, "chat.completion");
  assert.equal(body.choices[0]!.message.content, "Done: json please.");
  assert.equal(body.choices[0]!.finish_reason, "stop");

  const viaFetch = (body: object) =>
    server.server.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
  const json = await viaFetch({ messages: [{ role: "user", content: "fetch json" }], session_id: sessionId });
  assert.equal(json.status, 200);
  assert.equal(json.headers.get("x-session-id"), sessionId);
  const fetchRunId = json.headers.get("x-agentloop-run-id")!;
  assert.match(fetchRunId, /^run_/);
  assert.notEqual(fetchRunId, runId);
  assert.equal(((await json.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "Done: fetch json.");
  const streamed = await viaFetch({ messages: [{ role: "user", content: "fetch stream" }], session_id: sessionId, stream: true });
  assert.equal(streamed.headers.get("x-session-id"), sessionId);
  const streamRunId = streamed.headers.get("x-agentloop-run-id")!;
  const { events, complete } = await unnumbered(streamed);
  assert.ok(complete);
  assert.ok(events[0]!.startsWith(`{"id":"chatcmpl-${streamRunId}"`));
  assert.equal(answerOf(events), "Done: fetch stream.");

  // A durable chat naming its session gets the session's history.
  const counted = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "count" }], session_id: sessionId });
  assert.equal(((await counted.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "Done: 4 user messages.");
  const countRunId = counted.headers.get("x-agentloop-run-id")!;

  // The four runs are the session's, with their status.
  for (const id of [runId, fetchRunId, streamRunId, countRunId]) assert.equal(await finished(id), "SUCCESS");
  const listed = (await (await get(`/v1/runs?session_id=${sessionId}`)).json()) as { runs: Array<{ runId: string; status: string; input: string }>; total: number };
  assert.equal(listed.total, 4);
  assert.deepEqual(new Set(listed.runs.map((run) => run.runId)), new Set([runId, fetchRunId, streamRunId, countRunId]));
  assert.ok(listed.runs.every((run) => run.status === "SUCCESS"));
  const one = (await (await get(`/v1/runs?session_id=${sessionId}&limit=1`)).json()) as { runs: unknown[]; total: number };
  assert.equal(one.total, 1);
  assert.equal(one.runs.length, 1);
  const succeeded = (await (await get(`/v1/runs?session_id=${sessionId}&status=success`)).json()) as { total: number };
  assert.equal(succeeded.total, 4);
  const cancelled = (await (await get(`/v1/runs?session_id=${sessionId}&status=Cancelled`)).json()) as { total: number };
  assert.equal(cancelled.total, 0);

  const shown = (await (await get(`/v1/runs/${runId}`)).json()) as { runId: string; status: string; sessionId: string };
  assert.deepEqual([shown.runId, shown.status, shown.sessionId], [runId, "SUCCESS", sessionId]);
  const missing = await refusal(await get("/v1/runs/run_missing"));
  assert.deepEqual([missing.status, missing.error.code, missing.error.message], [404, "run_not_found", 'no durable run "run_missing"']);

  // A finished run can be neither cancelled nor resumed.
  const cancel = await refusal(await post(`/v1/runs/${runId}/cancel`));
  assert.deepEqual([cancel.status, cancel.error.code, cancel.error.type], [409, "run_finished", "invalid_request_error"]);
  assert.equal(cancel.error.message, `run "${runId}" already finished (SUCCESS): nothing to cancel`);
  const resume = await refusal(await post(`/v1/runs/${runId}/resume`));
  assert.equal(resume.status, 409);
  assert.equal(resume.error.message, `run "${runId}" already finished (SUCCESS): nothing to resume`);
  assert.equal((await refusal(await post("/v1/runs/run_missing/cancel"))).status, 404);
  assert.equal((await refusal(await post("/v1/runs/run_missing/resume"))).status, 404);
});

test("the list's filters are checked: a status not a run's, a limit not a positive integer", async () => {
  const status = await refusal(await get("/v1/runs?status=done"));
  assert.deepEqual([status.status, status.error.param, status.error.code], [400, "status", "invalid_status"]);
  assert.equal(status.error.message, 'status must be one of ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED, MAX_RECOVERY_ATTEMPTS_EXCEEDED, got "done"');
  for (const status of ["enqueued", "PENDING", "error", "max_recovery_attempts_exceeded"]) assert.equal((await get(`/v1/runs?status=${status}`)).status, 200, status);
  for (const limit of ["0", "-1", "1.5", "x", ""]) {
    const refused = await refusal(await get(`/v1/runs?limit=${limit}`));
    assert.deepEqual([refused.status, refused.error.param, refused.error.code, refused.error.message], [400, "limit", "invalid_limit", "limit must be a positive integer"], limit);
  }
  const all = (await (await get("/v1/runs?limit=100000")).json()) as { runs: unknown[]; total: number };
  assert.ok(all.total >= 3);
  assert.equal(all.total, all.runs.length);
  const bad = await refusal(await get("/v1/runs?session_id=a%20b"));
  assert.equal(bad.status, 400);
  assert.equal(bad.error.param, "session_id");
});

test("recover: one executor id or a list, answered with the runs recovered; anything else is refused naming executor_id", async () => {
  // The log lines this request adds (a test may run again in the same process: earlier lines do not count).
  let seen = server.logs.length;
  const logged = () => server.logs.slice(seen);
  const one = await post("/v1/runs/recover", { executor_id: `gone-${tag}` });
  assert.equal(one.status, 200);
  assert.deepEqual(await one.json(), { recovered: [], total: 0 });
  assert.ok(logged().includes(`[durable-routes] recovered 0 run(s) of executor(s) gone-${tag}`), logged().join("\n"));
  seen = server.logs.length;
  const list = await post("/v1/runs/recover", { executor_id: [`a-${tag}`, `b-${tag}`] });
  assert.deepEqual(await list.json(), { recovered: [], total: 0 });
  assert.ok(logged().includes(`[durable-routes] recovered 0 run(s) of executor(s) a-${tag}, b-${tag}`), logged().join("\n"));
  assert.equal((await post("/v1/runs/recover", { executor_id: "x".repeat(256) })).status, 200);
  assert.equal((await post("/v1/runs/recover", { executor_id: Array.from({ length: 100 }, (_, index) => `e${index}`) })).status, 200);
  for (const executorId of [[], "", "x".repeat(257), Array.from({ length: 101 }, (_, index) => `e${index}`), 7, ["ok", 7], "a\u007fb", "a\u001fb", "\ud800", [{ length: 1 }], null]) {
    const refused = await refusal(await post("/v1/runs/recover", { executor_id: executorId }));
    assert.equal(refused.status, 400, JSON.stringify(executorId));
    assert.equal(refused.error.param, "executor_id");
    assert.equal(refused.error.code, "invalid_executor_id");
    assert.equal(
      refused.error.message,
      'executor_id must be an executor id or a list of 1-100 of them (each 1-256 characters, without control characters or lone surrogates), e.g. { "executor_id": "replica-0" }',
    );
  }
  assert.equal((await refusal(await postJson(`${server.url}/v1/runs/recover`, "null"))).status, 400);
});

test("cancel stops a queued run (its stream ends with the cancellation) and a running one; resume runs each to its end, the replayed events stored once", async () => {
  const sessionId = session();
  const inTool = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const running = await chat("hold", sessionId);
  const runningId = running.headers.get("x-agentloop-run-id")!;
  const reading = readEvents(running);
  await inTool;
  const queued = await chat("queued one", sessionId);
  const queuedId = queued.headers.get("x-agentloop-run-id")!;
  const shownQueued = (await (await get(`/v1/runs/${queuedId}`)).json()) as { status: string };
  assert.equal(shownQueued.status, "ENQUEUED");
  const cancelled = await post(`/v1/runs/${queuedId}/cancel`);
  assert.equal(cancelled.status, 200);
  assert.equal(((await cancelled.json()) as { status: string }).status, "CANCELLED");
  const ended = await readEvents(queued);
  assert.ok(ended.complete, ended.events.join("\n"));
  const failure = JSON.parse(ended.events[0]!) as { error: { message: string; code: string; type: string } };
  assert.deepEqual(failure.error, { message: `run ${queuedId} was cancelled`, type: "server_error", code: "aborted", param: null });

  const stopped = await post(`/v1/runs/${runningId}/cancel`);
  assert.equal(((await stopped.json()) as { status: string }).status, "CANCELLED");
  const runningEnd = await reading;
  assert.ok(runningEnd.complete, runningEnd.events.join("\n"));
  // Executing in this process, the cancel stops its loop at once: the loop's own ending ("aborted: …");
  // on another replica the journal ends without it and the route says so (the queued run above).
  assert.match(runningEnd.events.at(-2)!, new RegExp(`"message":"(aborted: )?run ${runningId} was cancelled"`));

  // What the cancelled execution stored: its start, the call, and the ending the cancel gave it.
  const storedOf = async (runId: string) =>
    ((await (await get(`/memory/events?session_id=${sessionId}&limit=1000`)).json()) as { events: Array<{ event_type: string; content: unknown; metadata: { run_id?: string } }> }).events.filter(
      (event) => event.metadata.run_id === runId,
    );
  // (Waited for: a resume counting them before they are stored is the case a crash gives.)
  const deadline = Date.now() + 10_000;
  while (!(await storedOf(runningId)).some((event) => event.event_type === "run_ended") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  // The running run resumed: its recorded steps replay, its memory events are not stored twice.
  released = Promise.resolve();
  assert.equal((await post(`/v1/runs/${runningId}/resume`)).status, 200);
  assert.equal(await finished(runningId), "SUCCESS");
  const rerun = await readEvents(await get(`/v1/runs/${runningId}/events`));
  assert.ok(rerun.complete, rerun.events.join("\n"));
  assert.equal(answerOf(rerun.events), "Done: released.");
  const recovered = await server.waitForLog(new RegExp(`run ${runningId} session ${sessionId} recovered: its \\d+ stored event\\(s\\) are not stored again`));
  assert.ok(Number(/its (\d+) stored/.exec(recovered)![1]) >= 3, recovered);
  const stored = await storedOf(runningId);
  // The session's log: what the first execution stored (its start, the call, what its cancel
  // ended with), then only what the resumed execution did that the first did not: the call's new
  // result, the answer, the end. The replayed start and call are not stored again.
  assert.deepEqual(
    stored.map((event) => [event.event_type, event.content]),
    [
      ["run_started", stored[0]!.content],
      ["user_message", "hold"],
      ["tool_call", { tool: "hold", arguments: {} }],
      ["tool_result", { tool: "hold", result: `Cancelled: run ${runningId} was cancelled` }],
      ["run_ended", { state: "ABORTED", reason: `aborted: run ${runningId} was cancelled` }],
      ["tool_result", { tool: "hold", result: "released" }],
      ["agent_response", "Done: released."],
      ["run_ended", { state: "COMPLETED", reason: "the model answered" }],
    ],
  );
  released = undefined;

  const resumed = await post(`/v1/runs/${queuedId}/resume`);
  assert.equal(resumed.status, 200);
  assert.ok(["ENQUEUED", "PENDING", "SUCCESS"].includes(((await resumed.json()) as { status: string }).status));
  const whole = await readEvents(await get(`/v1/runs/${queuedId}/events`));
  assert.ok(whole.complete, whole.events.join("\n"));
  assert.equal(answerOf(whole.events), "Done: queued one.");
  assert.equal(await finished(queuedId), "SUCCESS");
});

test("resume of a run whose cancelled execution is still stopping here (a tool ignoring its signal): 409 run_stopping naming the call, the run left as it was; once the tool ends, resume completes it; a bad wait_ms is a 400", async () => {
  const sessionId = session();
  const entered = new Promise<void>((resolve) => {
    deafEntered = resolve;
  });
  const response = await chat("deaf", sessionId);
  const runId = response.headers.get("x-agentloop-run-id")!;
  const reading = readEvents(response);
  await entered;
  assert.equal(((await (await post(`/v1/runs/${runId}/cancel`)).json()) as { status: string }).status, "CANCELLED");
  assert.ok((await reading).complete);

  for (const body of [{ wait_ms: -1 }, { wait_ms: 1.5 }, { wait_ms: "0" }, { wait_ms: 60_001 }, [0], null]) {
    const refused = await refusal(await post(`/v1/runs/${runId}/resume`, JSON.stringify(body)));
    assert.equal(refused.status, 400, JSON.stringify(body));
    assert.equal(refused.error.code, "invalid_wait_ms");
    assert.equal(refused.error.param, "wait_ms");
  }
  const stopping = await refusal(await post(`/v1/runs/${runId}/resume`, { wait_ms: 0 }));
  assert.equal(stopping.status, 409);
  assert.equal(stopping.error.code, "run_stopping");
  assert.match(stopping.error.message, new RegExp(`run "${runId}" is still stopping: .*still running: tool "deaf" \\(call call_deaf\\)`));
  assert.equal(((await (await get(`/v1/runs/${runId}`)).json()) as { status: string }).status, "CANCELLED");

  deafRelease();
  const resumed = await fetch(`${server.url}/v1/runs/${runId}/resume`, { method: "POST" });
  assert.equal(resumed.status, 200, await resumed.clone().text());
  assert.equal(await finished(runId), "SUCCESS");
  const rerun = await readEvents(await get(`/v1/runs/${runId}/events`));
  assert.equal(answerOf(rerun.events), "Done: heard.");
});

test("a durable run stopped for approval goes on with POST /v1/approvals: the next leg streamed (or as JSON) with the run id; refusals for nothing pending, an unknown call, a second decision", async () => {
  for (const stream of [true, false]) {
    const sessionId = session();
    const asked = await readEvents(await chat("pay 5", sessionId));
    assert.ok(asked.complete);
    assert.match(asked.events.join(""), /"finish_reason":"approval_required"/);
    const unknownCall = await refusal(await post("/v1/approvals", { session_id: sessionId, decisions: { call_nope: { approve: true } } }));
    assert.deepEqual([unknownCall.status, unknownCall.error.code, unknownCall.error.param], [400, "invalid_decisions", "decisions.call_nope"]);
    assert.equal(unknownCall.error.message, 'no approval is pending for tool call "call_nope" (pending: call_pay)');
    const otherArguments = await refusal(await post("/v1/approvals", { session_id: sessionId, decisions: { call_pay: { approve: true, arguments_hash: "0".repeat(64) } } }));
    assert.deepEqual([otherArguments.status, otherArguments.error.code], [400, "invalid_decisions"]);
    assert.match(otherArguments.error.message, /^the decision for "call_pay" \(pay\) was made for other arguments/);

    const decided = await post("/v1/approvals", { session_id: sessionId, decisions: { call_pay: { approve: true } }, stream });
    assert.equal(decided.status, 200);
    const runId = decided.headers.get("x-agentloop-run-id")!;
    assert.match(runId, /^run_/);
    assert.equal(decided.headers.get("x-session-id"), sessionId);
    if (stream) {
      const leg = await unnumbered(decided);
      assert.ok(leg.complete, leg.events.join("\n"));
      assert.equal(answerOf(leg.events), "Done: paid 5.");
    } else {
      const body = (await decided.json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
      assert.equal(body.choices[0]!.message.content, "Done: paid 5.");
      assert.equal(body.choices[0]!.finish_reason, "stop");
    }
    const again = await refusal(await post("/v1/approvals", { session_id: sessionId, decisions: { call_pay: { approve: true } } }));
    assert.deepEqual([again.status, again.error.code], [409, "approval_already_decided"]);
  }
  const nothing = await refusal(await post("/v1/approvals", { session_id: session(), decisions: { call_pay: { approve: true } } }));
  assert.deepEqual([nothing.status, nothing.error.code], [404, "no_pending_approval"]);
});

test("a durable approval answered as JSON whose run stops for approval again: the answer is the second stop, and its decision completes the run", async () => {
  const sessionId = session();
  const asked = await readEvents(await chat("pay 5 then 7", sessionId));
  assert.ok(asked.complete, asked.events.join("\n"));
  assert.match(asked.events.join(""), /"finish_reason":"approval_required"/);
  // Bounded: this answer once never came (the run's second stop was not seen).
  const first = await postJson(`${server.url}/v1/approvals`, { session_id: sessionId, decisions: { call_pay: { approve: true } }, stream: false }, {}, AbortSignal.timeout(15_000));
  assert.equal(first.status, 200);
  const runId = first.headers.get("x-agentloop-run-id")!;
  const stopped = (await first.json()) as { choices: Array<{ message: { content: string | null }; finish_reason: string }> };
  assert.equal(stopped.choices[0]!.finish_reason, "approval_required");
  const second = await postJson(`${server.url}/v1/approvals`, { session_id: sessionId, decisions: { call_pay_2: { approve: true } }, stream: false }, {}, AbortSignal.timeout(15_000));
  assert.equal(second.status, 200);
  assert.equal(second.headers.get("x-agentloop-run-id"), runId);
  const done = (await second.json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
  assert.deepEqual([done.choices[0]!.message.content, done.choices[0]!.finish_reason], ["Done: paid 7.", "stop"]);
  assert.equal(await finished(runId), "SUCCESS");
});

test("a cancelled run resumed at once (its cancelled execution not ended yet): a reader attached while it goes on follows it to its end", async () => {
  const sessionId = session();
  const inTool = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const running = await chat("hold", sessionId);
  const runId = running.headers.get("x-agentloop-run-id")!;
  const reading = readEvents(running);
  await inTool;
  assert.equal((await post(`/v1/runs/${runId}/cancel`)).status, 200);
  assert.ok((await reading).complete);
  // The resumed execution's tool is held until a reader attached while the run goes on.
  let release!: () => void;
  released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const rerunning = new Promise<void>((resolve) => {
    holding = resolve;
  });
  assert.equal((await post(`/v1/runs/${runId}/resume`)).status, 200);
  // Bounded: this reader once waited for ever on the cancelled execution's journal.
  const live = readEvents(await get(`/v1/runs/${runId}/events`, {}, AbortSignal.timeout(15_000)));
  await rerunning;
  release();
  const followed = await live;
  released = undefined;
  assert.ok(followed.complete, `${followed.error}\n${followed.events.join("\n")}`);
  assert.equal(answerOf(followed.events), "Done: released.");
  assert.equal(await finished(runId), "SUCCESS");
});

type StoredEvent = { event_type: string; content: unknown; metadata: { run_id?: string; source?: string; tool_call_id?: string } };
/** The session's memory as a client reads it. */
const memoryOf = async (sessionId: string) => ((await (await get(`/memory/events?session_id=${sessionId}&limit=1000`)).json()) as { events: StoredEvent[] }).events;
/** A run's events in its session's memory (type, and tool call when there is one). */
const eventsOf = async (sessionId: string, runId: string) =>
  (await memoryOf(sessionId)).filter((event) => event.metadata.run_id === runId).map((event) => [event.event_type, event.metadata.tool_call_id ?? null, event.content]);

test("a delegated task in durable mode: task_delegation_received stored first, once; a plain chat stores none; the stream opens with the role chunk", async () => {
  const sessionId = session();
  const delegated = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "task-delegation", content: "process the data" }], session_id: sessionId });
  assert.equal(delegated.status, 200);
  assert.equal(((await delegated.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "Done: process the data.");
  const runId = delegated.headers.get("x-agentloop-run-id")!;
  assert.equal(await finished(runId), "SUCCESS");
  // The log line of the run's end, as the plain server writes it.
  await server.waitForLog(new RegExp(`^\\[durable-routes\\] run ${runId} session ${sessionId} COMPLETED: the model answered$`));
  const plain = await chat("next", sessionId);
  const streamed = await unnumbered(plain);
  assert.ok(streamed.complete);
  // The first chunk gives the role, as OpenAI's streams do.
  assert.deepEqual((JSON.parse(streamed.events[0]!) as { choices: Array<{ delta: unknown }> }).choices[0]!.delta, { role: "assistant", content: "" });
  assert.equal(await finished(plain.headers.get("x-agentloop-run-id")!), "SUCCESS");
  const stored = await memoryOf(sessionId);
  assert.deepEqual(
    stored.map((event) => event.event_type),
    ["task_delegation_received", "run_started", "user_message", "agent_response", "run_ended", "run_started", "user_message", "agent_response", "run_ended"],
  );
  assert.equal(stored[0]!.content, "process the data");
  assert.equal(stored[0]!.metadata.source, "task-delegation");
});

test("the refusals of the run and approval routes name their type, param and reason; the launch is logged", async () => {
  assert.ok(server.logs.includes(`[durable-routes] durable runs: executor ${executor}, DBOS schema ${schemas[1]}`), server.logs.join("\n"));
  const missing = await refusal(await get("/v1/runs/run_missing"));
  assert.deepEqual([missing.status, missing.error.type, missing.error.param], [404, "not_found_error", "run_id"]);
  const noEvents = await refusal(await get("/v1/runs/run_nope/events"));
  assert.deepEqual([noEvents.status, noEvents.error.type], [404, "not_found_error"]);
  const sessionId = session();
  const nothing = await refusal(await post("/v1/approvals", { session_id: sessionId, decisions: { call_pay: { approve: true } } }));
  assert.deepEqual([nothing.status, nothing.error.type, nothing.error.param, nothing.error.message], [404, "not_found_error", "session_id", `no approval is pending in session "${sessionId}"`]);

  // Two calls waiting: the pending ones listed; a decision with the right hash taken.
  const asked = await readEvents(await chat("pay both", sessionId));
  assert.ok(asked.complete);
  const required = asked.events.flatMap((event) => {
    const chunk = event.startsWith("{") ? (JSON.parse(event) as { approval_required?: { checkpoint_id: string; pending: Array<{ tool_call_id: string; arguments_hash: string }> } }) : {};
    return chunk.approval_required ? [chunk.approval_required] : [];
  })[0]!;
  assert.deepEqual(
    required.pending.map((entry) => entry.tool_call_id),
    ["call_a", "call_b"],
  );
  const unknownCall = await refusal(await post("/v1/approvals", { session_id: sessionId, decisions: { call_c: { approve: true } } }));
  assert.equal(unknownCall.error.message, 'no approval is pending for tool call "call_c" (pending: call_a, call_b)');
  const otherArguments = await refusal(await post("/v1/approvals", { session_id: sessionId, decisions: { call_b: { approve: true, arguments_hash: "0".repeat(64) } } }));
  assert.deepEqual([otherArguments.status, otherArguments.error.param], [400, "decisions.call_b"]);
  const decided = await post("/v1/approvals", {
    session_id: sessionId,
    decisions: { call_a: { approve: true, arguments_hash: required.pending[0]!.arguments_hash }, call_b: { approve: false, reason: "no", arguments_hash: required.pending[1]!.arguments_hash } },
    stream: false,
  });
  assert.equal(decided.status, 200);
  const runId = decided.headers.get("x-agentloop-run-id")!;
  assert.match(((await decided.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, /^Done: /);
  await server.waitForLog(new RegExp(`^\\[durable-routes\\] run ${runId} session ${sessionId}: decisions sent \\(call_a, call_b\\)$`));
  const again = await refusal(await post("/v1/approvals", { session_id: sessionId, decisions: { call_a: { approve: true } } }));
  assert.deepEqual(
    [again.status, again.error.type, again.error.code, again.error.message],
    [409, "invalid_request_error", "approval_already_decided", `the approvals of checkpoint ${required.checkpoint_id} in session "${sessionId}" were decided already`],
  );
});

test("a run cancelled in the leg after its approval and resumed: the replay goes through the approval, each stored event once; another session's run meanwhile is stored whole", async () => {
  const sessionId = session();
  const asked = await readEvents(await chat("pay 5 then hold", sessionId));
  assert.match(asked.events.join(""), /"finish_reason":"approval_required"/);
  const inTool = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const decided = await post("/v1/approvals", { session_id: sessionId, decisions: { call_pay: { approve: true } }, stream: true });
  const runId = decided.headers.get("x-agentloop-run-id")!;
  const reading = readEvents(decided);
  await inTool;
  assert.equal((await post(`/v1/runs/${runId}/cancel`)).status, 200);
  assert.ok((await reading).complete);
  const deadline = Date.now() + 10_000;
  const aborted = (events: unknown[][]) => events.some(([type, , content]) => type === "run_ended" && (content as { state: string }).state === "ABORTED");
  while (!aborted(await eventsOf(sessionId, runId)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const before = await eventsOf(sessionId, runId);

  // Resumed: held in the tool again (every replayed event seen) while another session runs.
  let release!: () => void;
  released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const rerunning = new Promise<void>((resolve) => {
    holding = resolve;
  });
  assert.equal((await post(`/v1/runs/${runId}/resume`)).status, 200);
  await rerunning;
  const other = session();
  const meanwhile = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "meanwhile" }], session_id: other });
  assert.equal(((await meanwhile.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "Done: meanwhile.");
  assert.equal(await finished(meanwhile.headers.get("x-agentloop-run-id")!), "SUCCESS");
  assert.deepEqual(
    (await memoryOf(other)).map((event) => event.event_type),
    ["run_started", "user_message", "agent_response", "run_ended"],
  );
  release();
  assert.equal(await finished(runId), "SUCCESS");
  released = undefined;
  const after = await eventsOf(sessionId, runId);
  // What the first execution stored, then only what the resumed one did that it did not.
  assert.deepEqual(after.slice(0, before.length), before);
  assert.deepEqual(after.slice(before.length), [
    ["tool_result", "call_hold", { tool: "hold", result: "released" }],
    ["agent_response", null, "Done: released."],
    ["run_ended", null, { state: "COMPLETED", reason: "the model answered" }],
  ]);
});

test("DURABLE=true without the PostgreSQL memory: the server is refused, naming MEMORY_TYPE", async () => {
  const refused = (expected: string) => (error: unknown) => {
    assert.equal((error as AgentLoopError).kind, "configuration");
    assert.equal((error as Error).message, `DURABLE: durable runs need MEMORY_TYPE=postgres (their checkpoints live in the same PostgreSQL), got MEMORY_TYPE=${expected}`);
    return true;
  };
  // A database URL given does not make another store durable.
  await assert.rejects(createAgentServer({ env: { DURABLE: "true", MEMORY_TYPE: "memory", DATABASE_URL: postgresUrl() }, log: () => undefined }), refused("memory"));
  await assert.rejects(createAgentServer({ env: { DURABLE: "true", DATABASE_URL: postgresUrl() }, memory: false, log: () => undefined }), refused("(unset)"));
});

test("durable routes before the agent is built (503 agent_unavailable) and when DBOS cannot launch (503 durable_unavailable, naming why); both servers close", async () => {
  const late = {
    AGENT_NAME: "durable-late",
    MEMORY_TYPE: "postgres",
    MEMORY_POSTGRES_URL: postgresUrl(),
    MEMORY_POSTGRES_SCHEMA: schemas[2],
    DURABLE: "true",
    DURABLE_SCHEMA: schemas[1],
    DEBUG_MOCK_RESPONSES: script("x"),
  };
  // A peer that accepts the connection and never answers: the agent waits for its card.
  const sockets: Socket[] = [];
  const silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const port = (silent.address() as AddressInfo).port;
  const building = await startTestServer({ ...late, PEER_AGENTS: "mute", PEER_AGENT_MUTE_CARD_URL: `http://127.0.0.1:${port}/.well-known/agent` }, { readyTimeoutMs: 60_000 });
  try {
    const unbuilt = await refusal(await fetch(`${building.url}/v1/runs`));
    assert.deepEqual(
      [unbuilt.status, unbuilt.error.type, unbuilt.error.code, unbuilt.error.message],
      [503, "server_error", "agent_unavailable", "durable runs are not available yet: the agent is not built"],
    );
  } finally {
    // Closed before its agent is built.
    await building.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
  // DBOS runs in this process already (this file's server): a second durable agent cannot be registered
  // (durableAgent refuses it, naming the agent).
  const failed = await startTestServer(late);
  try {
    await failed.waitForLog(/agent could not be built/);
    const unavailable = await refusal(await fetch(`${failed.url}/v1/runs`));
    assert.deepEqual([unavailable.status, unavailable.error.type, unavailable.error.code], [503, "server_error", "durable_unavailable"]);
    assert.match(unavailable.error.message, /^durable runs are not available: durableAgent: agent "durable-late" is created after launch\(\): create every durable agent before/);
  } finally {
    await failed.close();
  }
});

test("a durable run whose events cannot be stored: an error chunk then [DONE], the failure logged, /ready degraded until a run's events are stored again", async () => {
  const sessionId = session();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  const events = `"${schemas[0]}".agentloop_events`;
  await client.query(`CREATE FUNCTION "${schemas[0]}".refuse_events() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$ LANGUAGE plpgsql`);
  await client.query(`CREATE TRIGGER refuse_events BEFORE INSERT ON ${events} FOR EACH ROW WHEN (NEW.session_id = '${sessionId}') EXECUTE FUNCTION "${schemas[0]}".refuse_events()`);
  try {
    const response = await chat("lost", sessionId);
    const runId = response.headers.get("x-agentloop-run-id")!;
    const text = await response.text();
    assert.match(text, /data: \{"error":\{"message":"the answer could not be stored \(memory store postgres\): [^"]*disk full[^"]*","type":"server_error","param":null,"code":"memory_write_failed"\}\}\n\ndata: \[DONE\]\n\n$/);
    await server.waitForLog(new RegExp(`^\\[durable-routes\\] run ${runId} session ${sessionId}: its events could not be stored: .*disk full`));
    const ready = (await (await get("/ready")).json()) as { status: string; unavailable?: Array<{ kind: string; name: string; reason: string }> };
    assert.notEqual(ready.status, "ready");
    // What failed, named: the memory store, the run and its session, and why.
    assert.equal(ready.status, "degraded");
    assert.equal(ready.unavailable?.length, 1, JSON.stringify(ready));
    assert.deepEqual({ kind: ready.unavailable![0]!.kind, name: ready.unavailable![0]!.name }, { kind: "memory", name: "postgres" });
    assert.match(ready.unavailable![0]!.reason, new RegExp(`^a write failed: ${runId} in ${sessionId}: .*disk full`));
  } finally {
    await client.query(`DROP TRIGGER refuse_events ON ${events}`);
    await client.query(`DROP FUNCTION "${schemas[0]}".refuse_events()`);
    await client.end();
  }
  const stored = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "stored" }], session_id: session() });
  assert.equal(stored.status, 200);
  assert.equal(((await (await get("/ready")).json()) as { status: string }).status, "ready");
});

test("a delegated task whose record is refused: the failure logged naming the session, the run still answered and its own events stored", async () => {
  const sessionId = session();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  const events = `"${schemas[0]}".agentloop_events`;
  await client.query(`CREATE FUNCTION "${schemas[0]}".refuse_delegation() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'no delegations here'; END $$ LANGUAGE plpgsql`);
  await client.query(
    `CREATE TRIGGER refuse_delegation BEFORE INSERT ON ${events} FOR EACH ROW WHEN (NEW.session_id = '${sessionId}' AND NEW.event_type = 'task_delegation_received') EXECUTE FUNCTION "${schemas[0]}".refuse_delegation()`,
  );
  try {
    const delegated = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "task-delegation", content: "process the data" }], session_id: sessionId });
    assert.equal(delegated.status, 200);
    assert.equal(((await delegated.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "Done: process the data.");
    await server.waitForLog(new RegExp(`^\\[durable-routes\\] could not record task_delegation_received in ${sessionId}: .*no delegations here`));
    assert.equal(await finished(delegated.headers.get("x-agentloop-run-id")!), "SUCCESS");
  } finally {
    await client.query(`DROP TRIGGER refuse_delegation ON ${events}`);
    await client.query(`DROP FUNCTION "${schemas[0]}".refuse_delegation()`);
    await client.end();
  }
  assert.deepEqual(
    (await memoryOf(sessionId)).map((event) => event.event_type),
    ["run_started", "user_message", "agent_response", "run_ended"],
  );
});

test("a decision sent twice at once (a double click): the run takes it once, and its next stop waits for its own decision", async () => {
  const sessionId = session();
  const asked = await readEvents(await chat("pay 5 then 7", sessionId));
  assert.ok(asked.complete, asked.events.join("\n"));
  assert.match(asked.events.join(""), /"finish_reason":"approval_required"/);
  const send = () => postJson(`${server.url}/v1/approvals`, { session_id: sessionId, decisions: { call_pay: { approve: true } }, stream: false }, {}, AbortSignal.timeout(15_000));
  const answers = await Promise.all([send(), send()]);
  const taken = answers.filter((answer) => answer.status === 200);
  assert.ok(taken.length > 0, answers.map((answer) => answer.status).join(", "));
  for (const answer of answers.filter((answer) => answer.status !== 200)) assert.equal((await refusal(answer)).error.code, "approval_already_decided");
  const runId = taken[0]!.headers.get("x-agentloop-run-id")!;
  // Each answer is the run's second stop: the repeated decision did not decide it.
  for (const answer of taken) {
    const stopped = (await answer.json()) as { choices: Array<{ finish_reason: string }> };
    assert.equal(stopped.choices[0]!.finish_reason, "approval_required");
  }
  const info = (await (await get(`/v1/runs/${runId}`)).json()) as { status: string; pendingApprovals?: Array<{ toolCallId: string }> };
  assert.equal(info.status, "PENDING");
  const second = await postJson(`${server.url}/v1/approvals`, { session_id: sessionId, decisions: { call_pay_2: { approve: true } }, stream: false }, {}, AbortSignal.timeout(15_000));
  assert.equal(second.status, 200);
  const done = (await second.json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
  assert.deepEqual([done.choices[0]!.message.content, done.choices[0]!.finish_reason], ["Done: paid 7.", "stop"]);
  assert.equal(await finished(runId), "SUCCESS");
});

test("a durable server whose agent cannot be built (two tools named alike): DBOS is never launched, the run routes answer 503, and the server closes cleanly", async () => {
  const broken = await startTestServer(
    { AGENT_NAME: "durable-broken", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: schemas[2], DURABLE: "true", DURABLE_SCHEMA: schemas[1] },
    { build: { model: asyncCleanupModel(plan, { asyncCleanup: false }), tools: [pay, pay] } },
  );
  let closed = false;
  try {
    await broken.waitForLog(/^\[durable-broken\] agent could not be built: .*pay/);
    // The build failed and why, not a promise of later availability ("not available yet").
    const runs = await refusal(await fetch(`${broken.url}/v1/runs`));
    assert.deepEqual([runs.status, runs.error.type, runs.error.code], [503, "server_error", "agent_unavailable"]);
    assert.match(runs.error.message, /^durable runs are not available: the agent could not be built: .*pay/);
    const events = await refusal(await fetch(`${broken.url}/v1/runs/run_x/events`));
    assert.deepEqual([events.status, events.error.code, events.error.message], [503, "agent_unavailable", runs.error.message]);
    // Its shutdown has no DBOS to stop: it resolves (a failure would name "the durable runs' DBOS shutdown").
    await broken.server.close({ graceMs: 0 });
    closed = true;
    await broken.waitForLog(/^\[durable-broken\] shut down$/);
  } finally {
    if (!closed) await broken.server.close({ graceMs: 0 }).catch(() => undefined);
  }
});

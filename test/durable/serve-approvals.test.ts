// Approvals on durable `serve` replicas (real processes, real PostgreSQL): the chat stops for an
// approval and its stream ends (`approval_required`); the replica is killed (SIGKILL); seconds later
// the decision is posted to another replica, which recovers the run: the run waits for it as a DBOS
// message, resumes there, the approved call runs once and the approvals response streams the rest.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { durableTestResources } from "./cleanup.js";
import { answerOf, postChat, readEvents, startReplica } from "./serve-helpers.js";

const { tag, replicas, durableEnv } = durableTestResources("t_durable_approvals", "dbos_approvals_serve");
const dir = mkdtempSync(join(tmpdir(), "agentloop-durable-approvals-"));
const payLog = join(dir, "pay.log");

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

const env = (executor: string) => durableEnv(executor, { PAY_LOG: payLog });

const post = (url: string, path: string, body: unknown) => fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

const paid = () => {
  try {
    return readFileSync(payLog, "utf8").trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
};

test("an approval decided on another replica after the asking one was killed resumes the durable run there; the approved call runs once", async () => {
  const asking = `a-${tag}`;
  // Alone at first, so the run is queued and taken by this replica.
  const a = await startReplica(env(asking));
  replicas.push(a);
  const session = `pay-${tag}`;

  // The chat stops at the approval: its stream ends with approval_required and [DONE].
  const chat = await postChat(a.url, "pay 42", session);
  const runId = chat.headers.get("x-agentloop-run-id")!;
  const first = await readEvents(chat);
  assert.ok(first.complete, first.events.join("\n"));
  const stop = first.events.map((event) => (event.startsWith("{") ? JSON.parse(event) : undefined)).find((chunk) => chunk?.choices?.[0]?.finish_reason === "approval_required");
  assert.ok(stop, `no approval_required chunk in ${first.events.join("\n")}`);

  a.child.kill("SIGKILL");
  await a.exited;
  // 10 s later (the figure: no process holds the wait meanwhile; the other replica starts
  // within them), on the other replica: bad decisions are refused before anything is sent.
  const tenSeconds = new Promise((resolve) => setTimeout(resolve, 10_000));
  const b = await startReplica(env(`b-${tag}`));
  replicas.push(b);
  const shown = (await (await fetch(`${b.url}/v1/runs/${runId}`)).json()) as { status: string; executorId: string; pendingApprovals?: Array<{ toolCallId: string; tool: string }> };
  assert.equal(shown.status, "PENDING");
  assert.equal(shown.executorId, asking);
  assert.deepEqual(shown.pendingApprovals?.map((call) => call.tool), ["pay"]);
  await tenSeconds;
  const unknown = await post(b.url, "/v1/approvals", { session_id: session, decisions: { call_other: { approve: true } } });
  assert.equal(unknown.status, 400);
  assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /no approval is pending for tool call "call_other"/);
  const nothing = await post(b.url, "/v1/approvals", { session_id: `none-${tag}`, decisions: { call_pay: { approve: true } } });
  assert.equal(nothing.status, 404);

  const decided = await post(b.url, "/v1/approvals", { session_id: session, decisions: { call_pay: { approve: true } } });
  assert.equal(decided.status, 200);
  assert.equal(decided.headers.get("x-agentloop-run-id"), runId);
  const rest = readEvents(decided);
  // The asking replica is gone for good: the other one recovers its runs (no process held the wait).
  const recovered = (await (await post(b.url, "/v1/runs/recover", { executor_id: asking })).json()) as { recovered: string[] };
  assert.deepEqual(recovered.recovered, [runId], b.log());
  const { events, complete } = await rest;
  assert.ok(complete, events.join("\n"));
  assert.equal(answerOf(events), "Done: paid 42.");
  assert.deepEqual(paid(), [`${runId}:call_pay 42`]);

  // Decided already: a second decision is refused, and the run finished on the other replica.
  const again = await post(b.url, "/v1/approvals", { session_id: session, decisions: { call_pay: { approve: true } } });
  assert.equal(again.status, 409);
  // The stream ends with the answer; the workflow records its output just after.
  let done: { status: string; executorId: string; result?: { state: string } };
  for (let tries = 0; ; tries++) {
    done = (await (await fetch(`${b.url}/v1/runs/${runId}`)).json()) as typeof done;
    if (done.status !== "PENDING" || tries === 100) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(done.status, "SUCCESS");
  assert.equal(done.executorId, `b-${tag}`);
  assert.equal(done.result?.state, "COMPLETED");

  // `stream: false`: the completion of the leg after the decision; a rejected call never runs.
  const second = await postChat(b.url, "pay 7", `${session}-2`);
  const secondRun = second.headers.get("x-agentloop-run-id")!;
  assert.ok((await readEvents(second)).complete);
  const rejected = await post(b.url, "/v1/approvals", { session_id: `${session}-2`, decisions: { call_pay: { approve: false, reason: "too much" } }, stream: false });
  assert.equal(rejected.status, 200);
  assert.equal(rejected.headers.get("x-agentloop-run-id"), secondRun);
  const completion = (await rejected.json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
  assert.equal(completion.choices[0]?.finish_reason, "stop");
  assert.match(completion.choices[0]?.message.content ?? "", /^Done: .*too much/);
  assert.deepEqual(paid(), [`${runId}:call_pay 42`]);
});

/**
 * A replica killed in the resumed leg: the chat `input` stops for `pay`'s approval, the decision
 * resumes it, `pay` runs and never returns, the replica is killed (kill -9) and restarted with its
 * executor id; the recovered run must store none of its replayed memory events again.
 */
async function killedInResumedLeg(name: string, input: string, extraEnv: Record<string, string> = {}) {
  // The replicas of the tests before are gone: they would take this run from the queue.
  for (const replica of replicas.splice(0)) {
    replica.child.kill("SIGKILL");
    await replica.exited;
  }
  const executor = `r-${name}-${tag}`;
  const hangLog = join(dir, `pay-hang-${name}.log`);
  const session = `resumed-${name}-${tag}`;
  const first = await startReplica(durableEnv(executor, { PAY_LOG: hangLog, PAY_HANG: "1", WORK_MS: "0", ...extraEnv }));
  replicas.push(first);
  const chat = await postChat(first.url, input, session);
  const runId = chat.headers.get("x-agentloop-run-id")!;
  assert.ok((await readEvents(chat)).complete);
  // The decision starts the resumed leg on the same replica: `pay` runs and never returns.
  const decided = await post(first.url, "/v1/approvals", { session_id: session, decisions: { call_pay: { approve: true } } });
  assert.equal(decided.status, 200);
  const leg = readEvents(decided);
  type Stored = { event_type: string; content: unknown; metadata: Record<string, unknown> };
  const stored = async (url: string) => ((await (await fetch(`${url}/memory/events?session_id=${session}&limit=1000`)).json()) as { events: Stored[] }).events;
  const paying = () => {
    try {
      return readFileSync(hangLog, "utf8").includes(`${runId}:call_pay 5`);
    } catch {
      return false;
    }
  };
  // Killed once the resumed leg's first events are stored and the approved call is running.
  for (const deadline = Date.now() + 60_000; ; ) {
    assert.ok(Date.now() < deadline, `the approved call did not start: ${first.log()}`);
    const types = (await stored(first.url)).map((event) => event.event_type);
    if (paying() && types.includes("approval_decided") && types.at(-1) === "tool_call") break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const before = await stored(first.url);
  first.child.kill("SIGKILL");
  await first.exited;
  await leg;

  // The same executor id again: DBOS recovers the run at launch; the call in flight is Interrupted (not idempotent).
  const second = await startReplica(durableEnv(executor, { PAY_LOG: hangLog, WORK_MS: "0", ...extraEnv }));
  replicas.push(second);
  let shown: { status: string; result?: { state: string; text: string } } | undefined;
  for (const deadline = Date.now() + 60_000; ; ) {
    assert.ok(Date.now() < deadline, `the recovered run did not finish: ${JSON.stringify(shown)}\n${second.log()}`);
    shown = (await (await fetch(`${second.url}/v1/runs/${runId}`)).json()) as typeof shown;
    if (shown!.status !== "PENDING" && shown!.status !== "ENQUEUED") break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(shown!.status, "SUCCESS", second.log());
  assert.match(shown!.result?.text ?? "", /^Done: Interrupted/);
  assert.equal(readFileSync(hangLog, "utf8").trim().split("\n").length, 1, "pay ran once");

  const after = await stored(second.url);
  const key = (event: Stored) => `${event.event_type} ${JSON.stringify(event.content)}`;
  // What the killed replica stored is still the log's start; the recovered run added only the rest.
  assert.deepEqual(after.slice(0, before.length).map(key), before.map(key));
  return after.map((event) => event.event_type);
}

test("a replica killed in the resumed leg (after the approval, while the approved call runs) recovers the run without storing its replayed memory events twice", { timeout: 180_000 }, async () => {
  const types = await killedInResumedLeg("pay", "pay 5");
  // Each of the run's events once (a run_started and a run_ended per leg).
  assert.deepEqual(types, [
    ...["run_started", "user_message", "approval_requested", "approval_requested", "run_ended"],
    ...["run_started", "approval_decided", "tool_call", "tool_result", "agent_response", "run_ended"],
  ]);
});

test("the same with 300 tool calls before the approval: every stored event of the run is counted (not only the session's last 500)", { timeout: 180_000 }, async () => {
  // The session keeps all of them (the default keeps its last 500 events).
  const types = await killedInResumedLeg("many", "pay 5 after 300", { MEMORY_MAX_SESSION_EVENTS: "5000" });
  const count = (type: string) => types.filter((candidate) => candidate === type).length;
  assert.equal(count("user_message"), 1);
  assert.equal(count("tool_call"), 301);
  assert.equal(count("tool_result"), 301);
  assert.equal(count("approval_decided"), 1);
  assert.equal(count("agent_response"), 1);
});

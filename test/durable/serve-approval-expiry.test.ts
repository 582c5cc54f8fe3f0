// Durable approvals expire (real `serve` replica, real PostgreSQL): a run that waits longer than
// approvals.timeoutMs goes on with the calls rejected (`Rejected: approval expired`), and a
// decision sent after that is refused with 410 `approval_expired`; the call never runs.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { durableTestResources } from "./cleanup.js";
import { postChat, readEvents, startReplica } from "./serve-helpers.js";

const { tag, replicas, durableEnv } = durableTestResources("t_durable_expiry", "dbos_expiry_serve");
const dir = mkdtempSync(join(tmpdir(), "agentloop-durable-expiry-"));
const payLog = join(dir, "pay.log");
after(() => rmSync(dir, { recursive: true, force: true }));

test("an approval not decided within approvals.timeoutMs expires: the call is rejected, a late decision gets 410", async () => {
  const replica = await startReplica(durableEnv(`x-${tag}`, { PAY_LOG: payLog, APPROVAL_TIMEOUT_MS: "1000" }));
  replicas.push(replica);
  const session = `expire-${tag}`;
  const chat = await postChat(replica.url, "pay 7", session);
  const runId = chat.headers.get("x-agentloop-run-id")!;
  const first = await readEvents(chat);
  assert.ok(first.events.some((event) => event.includes('"finish_reason":"approval_required"')), first.events.join("\n"));
  // The run goes on by itself once the approval expired, and ends.
  const deadline = Date.now() + 30_000;
  let status = "";
  while (Date.now() < deadline) {
    status = ((await (await fetch(`${replica.url}/v1/runs/${runId}`)).json()) as { status: string }).status;
    if (status === "SUCCESS") break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(status, "SUCCESS", replica.log());
  const late = await fetch(`${replica.url}/v1/approvals`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: session, decisions: { call_pay: { approve: true } } }) });
  assert.equal(late.status, 410);
  const body = (await late.json()) as { error: { code: string; message: string } };
  assert.equal(body.error.code, "approval_expired");
  assert.match(body.error.message, /expired/);
  assert.equal(existsSync(payLog) ? readFileSync(payLog, "utf8") : "", "", "the call never ran");
  const events = (await (await fetch(`${replica.url}/memory/events?session_id=${session}`)).json()) as { events: Array<{ event_type: string; content: any }> };
  const results = events.events.filter((event) => event.event_type === "tool_result").map((event) => event.content.result);
  assert.deepEqual(results, ["Rejected: approval expired"]);
});

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { tsChild } from "../ts-child.js";

const child = fileURLToPath(new URL("./fixtures/resume-child.ts", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "agentloop-resume-"));
after(async () => {
  rmSync(root, { recursive: true, force: true });
  await dropSchemas();
});

async function step(env: Record<string, string>): Promise<Record<string, string>> {
  const { stdout } = await promisify(execFile)(process.execPath, await tsChild(child), { env: { ...process.env, ...env }, timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!);
}

test("interrupt in one process, resume in another: each approved call runs exactly once; a third process's resume is refused", async () => {
  const countFile = join(root, "count.txt");
  const checkpointFile = join(root, "checkpoint.json");
  writeFileSync(countFile, "");
  const schema = uniqueSchema("resume");
  const env = {
    MEMORY_ENABLED: "true",
    MEMORY_TYPE: "postgres",
    MEMORY_POSTGRES_URL: postgresUrl(),
    MEMORY_POSTGRES_SCHEMA: schema,
    SESSION_ID: "approvals-1",
    COUNT_FILE: countFile,
    CHECKPOINT_FILE: checkpointFile,
  };
  assert.deepEqual(await step({ ...env, MODE: "start" }), { state: "INTERRUPTED" });
  assert.equal(readFileSync(countFile, "utf8"), "", "nothing ran before the decisions");

  const decisions = JSON.stringify({ w1: { approve: true }, w2: { approve: false, reason: "b stays" } });
  const resumed = await step({ ...env, MODE: "resume", DECISIONS: decisions });
  assert.deepEqual(resumed, { state: "COMPLETED", text: "Done writing.", reason: "the model answered" });
  assert.equal(readFileSync(countFile, "utf8"), "a\n", "the approved call ran once, the rejected one never");

  const again = await step({ ...env, MODE: "resume", DECISIONS: decisions });
  assert.equal(again.state, "FAILED");
  assert.match(again.reason!, /checkpoint ckpt_[0-9a-f-]+ was already resumed \(session approvals-1 records it\)/);
  assert.equal(readFileSync(countFile, "utf8"), "a\n", "still once");

  // The session's log holds the checkpoint and the decisions.
  const store = await openPostgresStore({ url: postgresUrl(), schema });
  try {
    const events = await store.events("approvals-1");
    const requested = events.filter((event) => event.event_type === "approval_requested").map((event) => event.content as Record<string, unknown>);
    const checkpoint = JSON.parse(readFileSync(checkpointFile, "utf8"));
    // One per call as it is asked, then the interrupted run's checkpoint.
    assert.deepEqual(
      requested.map((content) => content.tool_call_id ?? content.checkpoint_id),
      ["w1", "w2", checkpoint.id],
    );
    assert.deepEqual(requested[2]!.checkpoint, checkpoint);
    const decided = events.filter((event) => event.event_type === "approval_decided");
    assert.equal(decided.length, 1);
    assert.deepEqual((decided[0]!.content as { decisions: unknown }).decisions, JSON.parse(decisions));
    const results = events.filter((event) => event.event_type === "tool_result").map((event) => (event.content as { result: string }).result);
    assert.deepEqual(results, ["wrote a", "Rejected: b stays"]);
  } finally {
    await store.close();
  }
});

test("in a new process the resume applies that process's guardrails to every call of the wave: a denied call never runs", async () => {
  const base = { MEMORY_TYPE: "memory", SCENARIO: "guarded", DENY: "wipe" };
  for (const [label, resumeDeny, expected] of [
    ["the same policy", "wipe", "pay\nlook\n"],
    ["pay denied since the interruption", "wipe,pay", "look\n"],
  ] as const) {
    const countFile = join(root, `guarded-${resumeDeny}.txt`);
    const checkpointFile = join(root, `guarded-${resumeDeny}.json`);
    writeFileSync(countFile, "");
    const env = { ...base, SESSION_ID: `guarded-${resumeDeny}`, COUNT_FILE: countFile, CHECKPOINT_FILE: checkpointFile };
    assert.deepEqual(await step({ ...env, MODE: "start" }), { state: "INTERRUPTED" }, label);
    const resumed = await step({ ...env, DENY: resumeDeny, MODE: "resume", DECISIONS: JSON.stringify({ c_pay: { approve: true } }) });
    assert.equal(resumed.state, "COMPLETED", label);
    assert.equal(readFileSync(countFile, "utf8"), expected, label);
    const results = resumed.results as unknown as Array<[string, string]>;
    assert.deepEqual(results[1], ["c_wipe", "Tool denied by guardrail: wipe is denied here"], label);
    if (resumeDeny.includes("pay")) assert.deepEqual(results[0], ["c_pay", "Tool denied by guardrail: pay is denied here"], label);
  }
});

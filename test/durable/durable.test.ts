// Durable runs (agentloop/durable) against a real PostgreSQL, with real child processes killed with
// SIGKILL in the middle of a run, their model a real OpenAI-compatible server on 127.0.0.1 (through
// agentloop/openai) or an in-process model whose stream cleanup is asynchronous (test/durable/models.ts).
// Every flow is a run of its own in the same two processes (test/durable/child.ts): the first starts
// them all and is killed once each is where its test wants it, the second recovers them all (as a
// replica restarted with its executor id does). DBOS's schema is the file's own, dropped afterwards.
// (One process per flow was 17 DBOS launches: ~15 s of CPU, the suite's costliest file.)
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import pg from "pg";
import { INTERRUPTED } from "../../src/durable/index.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { tsChild } from "../ts-child.js";
import { MODEL_KINDS, type ModelKind } from "./models.js";
import type { ChildRun } from "./plans.js";

const child = join(import.meta.dirname, "child.ts");
const folder = mkdtempSync(join(tmpdir(), "agentloop-durable-"));
// Every run of this file in one schema, under one executor id: one process starts them all, is
// killed (SIGKILL) once each is where its test wants it, and one restarted process recovers them all.
const schema = `dbos_durable_${randomUUID().slice(0, 8)}`;
let url: string;

before(async () => {
  url = postgresUrl();
});

/** The child processes started, killed after the tests if one is still running (a test that failed waiting for it). */
const children: ChildProcess[] = [];

after(async () => {
  for (const started of children) if (started.exitCode === null && started.signalCode === null) started.kill("SIGKILL");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
  rmSync(folder, { recursive: true, force: true });
});

interface Outcome {
  result: { state: string; text: string; toolCalls: number; runId: string };
  events: string[];
}

/** A child process running `runs` (child.ts); its stdout's lines as they come. */
async function start(runs: ChildRun[], startRuns: boolean) {
  const process_ = spawn(process.execPath, await tsChild(child), {
    env: { ...process.env, NODE_NO_WARNINGS: "1", PG_URL: url, SCHEMA: schema, EXECUTOR: "exec-durable-test", START: startRuns ? "1" : "0", RUNS: JSON.stringify(runs) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(process_);
  let stdout = "";
  let stderr = "";
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  /** The whole lines printed so far. */
  const lines = () => stdout.slice(0, stdout.lastIndexOf("\n") + 1);
  process_.stdout!.on("data", (chunk) => {
    stdout += chunk;
    for (const waiter of waiters.filter((candidate) => lines().includes(candidate.text))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  process_.stderr!.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve, reject) => {
    process_.on("exit", (code, signal) => (code === 0 || signal === "SIGKILL" ? resolve() : reject(new Error(`child exited ${code}: ${stderr}\n${stdout}`))));
  });
  exited.catch(() => undefined);
  return {
    process: process_,
    exited,
    /** Resolves once the child printed `text`; rejects if it exits first. */
    printed: (text: string) =>
      Promise.race([
        new Promise<void>((resolve) => (lines().includes(text) ? resolve() : waiters.push({ text, resolve }))),
        exited.then(() => Promise.reject(new Error(`child exited before printing ${JSON.stringify(text)}: ${stderr}\n${stdout}`))),
      ]),
    /** The outcome the child printed for run `runId`. */
    outcome(runId: string): Outcome {
      const line = stdout.split("\n").find((candidate) => candidate.startsWith(`{"runId":${JSON.stringify(runId)}`));
      assert.ok(line, `no result printed for ${runId}: ${stdout}`);
      return JSON.parse(line) as Outcome;
    },
  };
}

/** One flow's run: its id, its log of tool executions, its settings for child.ts. */
function setup(name: string, settings: Omit<ChildRun, "runId" | "file">): ChildRun {
  return { runId: `run_${name}_${randomUUID().slice(0, 8)}`, file: join(folder, `${name}.log`), ...settings };
}

const logOf = (run: ChildRun) => readFileSync(run.file, "utf8").trim().split("\n");

// The flows, each a run of its own, all in the same two processes (a DBOS launch is most of a
// process's cost). Every crash runs with each model kind: the Chat Completions adapter on a loopback
// server, and an in-process model whose stream cleanup is asynchronous.
// - plain: the uninterrupted run (in-process model), completed in the first process;
// - idem / nonidem: killed while its third tool call (idempotent or not) hangs;
// - approval: killed while its second call waits for approval; the restarted process approves it;
// - wave: a wave of three concurrent calls, killed while call 2 runs (calls 1 and 3 recorded).
const plain = setup("plain", { model: "in-process", plan: "steps", idempotent: true });
const flowsOf = (kind: ModelKind) => {
  const id = kind.replace("-", "_");
  return {
    idem: setup(`idem_${id}`, { model: kind, plan: "steps", idempotent: true, hangAt: 3 }),
    nonidem: setup(`nonidem_${id}`, { model: kind, plan: "steps", idempotent: false, hangAt: 3 }),
    approval: setup(`approval_${id}`, { model: kind, plan: "steps", approval: true, decide: true }),
    wave: setup(`wave_${id}`, { model: kind, plan: "wave", hangAt: 2, hangAfter: 2 }),
  };
};
const flows = Object.fromEntries(MODEL_KINDS.map((kind) => [kind, flowsOf(kind)])) as Record<ModelKind, ReturnType<typeof flowsOf>>;
const crashed = MODEL_KINDS.flatMap((kind) => Object.values(flows[kind]));

/** What each run printed: the plain run in the first process, the crashed ones in the one that recovered them. */
let outcomes: Promise<(runId: string) => Outcome>;
before(() => {
  outcomes = (async () => {
    const first = await start([plain, ...crashed.map(({ decide, ...run }) => run)], true);
    await Promise.all([
      first.printed(`{"runId":${JSON.stringify(plain.runId)}`),
      ...crashed.map((run) => first.printed(run.approval ? `approval requested ${run.runId}` : `hanging ${run.runId} ${run.hangAt}`)),
    ]);
    const plainOutcome = first.outcome(plain.runId);
    first.process.kill("SIGKILL");
    await first.exited;
    // Restarted without the hangs; the approval decided there. The same runs, so the same durable
    // agents: DBOS recovers only the runs of its application version, a hash of the workflows.
    const second = await start(
      [plain, ...crashed.map(({ hangAt, hangAfter, ...run }) => run)],
      false,
    );
    await second.exited;
    return (runId: string) => (runId === plain.runId ? plainOutcome : second.outcome(runId));
  })();
  outcomes.catch(() => undefined);
});

test("the uninterrupted run (in-process model) completes its four steps", async () => {
  const uninterrupted = (await outcomes)(plain.runId);
  assert.equal(uninterrupted.result.state, "COMPLETED");
  assert.equal(uninterrupted.result.text, "done: step 1 ok | step 2 ok | step 3 ok | step 4 ok");
});

// A safety net: a run that hangs (as a durable run on an HTTP model did) fails its test instead of the suite's.
const timeout = 120_000;

/** A crashed flow's outcome (from the process that recovered it) and its log of tool executions. */
async function recovered(run: ChildRun) {
  return { outcome: (await outcomes)(run.runId), lines: logOf(run), runId: run.runId };
}

for (const kind of MODEL_KINDS) {
  test(`${kind} model: a run killed after two of four tool calls finishes after a restart: tools 1-2 ran once, the answer is the uninterrupted one`, { timeout }, async () => {
    const uninterrupted = (await outcomes)(plain.runId);
    const { outcome, lines, runId } = await recovered(flows[kind].idem);
    assert.equal(outcome.result.state, "COMPLETED");
    assert.equal(outcome.result.text, uninterrupted.result.text);
    assert.equal(outcome.result.runId, runId);
    const count = (line: string) => lines.filter((candidate) => candidate === line).length;
    assert.equal(count(`start 1 ${runId}:call_1`), 1, lines.join("\n"));
    assert.equal(count(`start 2 ${runId}:call_2`), 1, lines.join("\n"));
    // The idempotent call in flight at the crash ran again, with the same idempotency key.
    assert.equal(count(`start 3 ${runId}:call_3`), 2, lines.join("\n"));
    assert.equal(count("done 3"), 1);
    assert.equal(count(`start 4 ${runId}:call_4`), 1);
  });

  test(`${kind} model: a non-idempotent tool call in flight at the crash is not run again: it gets the Interrupted result and the loop goes on`, { timeout }, async () => {
    const { outcome, lines, runId } = await recovered(flows[kind].nonidem);
    assert.equal(outcome.result.state, "COMPLETED");
    assert.equal(outcome.result.text, `done: step 1 ok | step 2 ok | ${INTERRUPTED} | step 4 ok`);
    assert.deepEqual(lines, [
      `start 1 ${runId}:call_1`,
      "done 1",
      `start 2 ${runId}:call_2`,
      "done 2",
      `start 3 ${runId}:call_3`,
      `start 4 ${runId}:call_4`,
      "done 4",
    ]);
  });

  test(`${kind} model: a run waiting for approval when its process was killed waits again after the restart; the decision resumes it`, { timeout }, async () => {
    const uninterrupted = (await outcomes)(plain.runId);
    const { outcome, lines, runId } = await recovered(flows[kind].approval);
    assert.equal(outcome.result.state, "COMPLETED");
    assert.equal(outcome.result.text, uninterrupted.result.text);
    assert.deepEqual(
      lines.filter((line) => line.startsWith("start")),
      [1, 2, 3, 4].map((n) => `start ${n} ${runId}:call_${n}`),
    );
  });

  test(`${kind} model: a wave of three non-idempotent calls killed mid-wave (kill -9) and recovered: each call executed exactly once`, { timeout }, async () => {
    const { outcome, lines, runId } = await recovered(flows[kind].wave);
    assert.equal(outcome.result.state, "COMPLETED");
    // Calls 1 and 3 were recorded before the kill: their results, not a second execution; call 2 was in flight.
    assert.equal(outcome.result.text, `done: step 1 ok | ${INTERRUPTED} | step 3 ok`);
    for (const n of [1, 2, 3]) assert.equal(lines.filter((line) => line === `start ${n} ${runId}:call_${n}`).length, 1, lines.join("\n"));
    assert.equal(lines.length, 5, lines.join("\n"));
  });
}

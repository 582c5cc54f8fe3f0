// Durable runs (agentloop/durable) against a real PostgreSQL, with real child processes killed with
// SIGKILL in the middle of a run, their model a real OpenAI-compatible server on 127.0.0.1 (through
// agentloop/openai) or an in-process model whose stream cleanup is asynchronous (test/durable/models.ts).
// Each test gives DBOS its own schema and drops it afterwards.
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

const child = join(import.meta.dirname, "child.ts");
const folder = mkdtempSync(join(tmpdir(), "agentloop-durable-"));
const schemas: string[] = [];
let url: string;

before(async () => {
  url = postgresUrl();
});

after(async () => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
  rmSync(folder, { recursive: true, force: true });
});

interface Outcome {
  result: { state: string; text: string; toolCalls: number; runId: string };
  events: string[];
}

async function start(env: Record<string, string>): Promise<{ process: ChildProcess; output: Promise<string> }> {
  const process_ = spawn(process.execPath, await tsChild(child), {
    env: { ...process.env, NODE_NO_WARNINGS: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  process_.stdout!.on("data", (chunk) => {
    stdout += chunk;
  });
  process_.stderr!.on("data", (chunk) => {
    stderr += chunk;
  });
  const output = new Promise<string>((resolve, reject) => {
    process_.on("exit", (code, signal) => (code === 0 || signal === "SIGKILL" ? resolve(stdout) : reject(new Error(`child exited ${code}: ${stderr}`))));
  });
  return { process: process_, output };
}

function waitForOutput(process_: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    process_.stdout!.on("data", (chunk) => {
      seen += chunk;
      if (seen.includes(text)) resolve();
    });
    process_.on("exit", () => reject(new Error(`child exited before printing ${JSON.stringify(text)}`)));
  });
}

function parse(stdout: string): Outcome {
  const line = stdout.split("\n").find((candidate) => candidate.startsWith("{"));
  assert.ok(line, `no result printed: ${stdout}`);
  return JSON.parse(line) as Outcome;
}

function setup(name: string) {
  const schema = `dbos_${name}_${randomUUID().slice(0, 8)}`;
  schemas.push(schema);
  const file = join(folder, `${name}.log`);
  const runId = `run_${name}_${randomUUID().slice(0, 8)}`;
  return { schema, file, runId, env: { PG_URL: url, SCHEMA: schema, EXECUTOR: `exec-${name}`, RUN_ID: runId, FILE: file } };
}

/** The model of a flow: the Chat Completions adapter on a loopback server of its plan, or the in-process model with an asynchronous cleanup. */
const modelEnv = (kind: ModelKind, plan: "steps" | "wave"): Record<string, string> => ({ MODEL: kind, PLAN: plan });

/** Starts a run that hangs in its third tool call, kills the process with SIGKILL, restarts it. */
async function crashAndRecover(name: string, idempotent: boolean, kind: ModelKind) {
  const { env, file, runId } = setup(name);
  const model = modelEnv(kind, "steps");
  const first = await start({ ...env, ...model, START: "1", HANG_AT: "3", IDEMPOTENT: idempotent ? "1" : "0" });
  await waitForOutput(first.process, "hanging 3");
  first.process.kill("SIGKILL");
  await first.output;
  const second = await start({ ...env, ...model, START: "0", IDEMPOTENT: idempotent ? "1" : "0" });
  const outcome = parse(await second.output);
  return { outcome, lines: readFileSync(file, "utf8").trim().split("\n"), runId };
}

/** Starts a run whose second call waits for approval, kills the process while it waits, approves from the restarted one. */
async function crashWhileWaiting(kind: ModelKind) {
  const { env, file, runId } = setup(`approval_${kind.replace("-", "_")}`);
  const model = modelEnv(kind, "steps");
  const first = await start({ ...env, ...model, START: "1", APPROVAL: "1" });
  await waitForOutput(first.process, "approval requested");
  first.process.kill("SIGKILL");
  await first.output;
  const outcome = parse(await (await start({ ...env, ...model, START: "0", APPROVAL: "1", DECIDE: "1" })).output);
  return { outcome, lines: readFileSync(file, "utf8").trim().split("\n"), runId };
}

/** A wave of three concurrent calls: killed while call 2 runs (calls 1 and 3 recorded), restarted. */
async function crashMidWave(kind: ModelKind) {
  const { env, file, runId } = setup(`wave_${kind.replace("-", "_")}`);
  const model = modelEnv(kind, "wave");
  const first = await start({ ...env, ...model, START: "1", HANG_AT: "2", HANG_AFTER: "2" });
  await waitForOutput(first.process, "hanging 2");
  first.process.kill("SIGKILL");
  await first.output;
  const outcome = parse(await (await start({ ...env, ...model, START: "0" })).output);
  return { outcome, lines: readFileSync(file, "utf8").trim().split("\n"), runId };
}

// The flows run at once (each process spends most of its time starting DBOS), each test awaits its own.
// Every crash runs with each model kind: the Chat Completions adapter on a loopback server, and an
// in-process model whose stream cleanup is asynchronous.
let flows: {
  plain: Promise<Outcome>;
  idem: Record<ModelKind, ReturnType<typeof crashAndRecover>>;
  nonidem: Record<ModelKind, ReturnType<typeof crashAndRecover>>;
  approval: Record<ModelKind, ReturnType<typeof crashWhileWaiting>>;
  wave: Record<ModelKind, ReturnType<typeof crashMidWave>>;
};
const byKind = <T>(make: (kind: ModelKind) => Promise<T>) => {
  const out = {} as Record<ModelKind, Promise<T>>;
  for (const kind of MODEL_KINDS) {
    out[kind] = make(kind);
    out[kind].catch(() => undefined);
  }
  return out;
};
before(() => {
  const plain = setup("plain");
  flows = {
    plain: start({ ...plain.env, START: "1", IDEMPOTENT: "1" }).then((started) => started.output).then(parse),
    idem: byKind((kind) => crashAndRecover(`idem_${kind.replace("-", "_")}`, true, kind)),
    nonidem: byKind((kind) => crashAndRecover(`nonidem_${kind.replace("-", "_")}`, false, kind)),
    approval: byKind(crashWhileWaiting),
    wave: byKind(crashMidWave),
  };
  flows.plain.catch(() => undefined);
});

test("the uninterrupted run (in-process model) completes its four steps", async () => {
  const uninterrupted = await flows.plain;
  assert.equal(uninterrupted.result.state, "COMPLETED");
  assert.equal(uninterrupted.result.text, "done: step 1 ok | step 2 ok | step 3 ok | step 4 ok");
});

// A safety net: a run that hangs (as a durable run on an HTTP model did) fails its test instead of the suite's.
const timeout = 120_000;

for (const kind of MODEL_KINDS) {
  test(`${kind} model: a run killed after two of four tool calls finishes after a restart: tools 1-2 ran once, the answer is the uninterrupted one`, { timeout }, async () => {
    const uninterrupted = await flows.plain;
    const { outcome, lines, runId } = await flows.idem[kind];
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
    const { outcome, lines, runId } = await flows.nonidem[kind];
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
    const uninterrupted = await flows.plain;
    const { outcome, lines, runId } = await flows.approval[kind];
    assert.equal(outcome.result.state, "COMPLETED");
    assert.equal(outcome.result.text, uninterrupted.result.text);
    assert.deepEqual(
      lines.filter((line) => line.startsWith("start")),
      [1, 2, 3, 4].map((n) => `start ${n} ${runId}:call_${n}`),
    );
  });

  test(`${kind} model: a wave of three non-idempotent calls killed mid-wave (kill -9) and recovered: each call executed exactly once`, { timeout }, async () => {
    const { outcome, lines, runId } = await flows.wave[kind];
    assert.equal(outcome.result.state, "COMPLETED");
    // Calls 1 and 3 were recorded before the kill: their results, not a second execution; call 2 was in flight.
    assert.equal(outcome.result.text, `done: step 1 ok | ${INTERRUPTED} | step 3 ok`);
    for (const n of [1, 2, 3]) assert.equal(lines.filter((line) => line === `start ${n} ${runId}:call_${n}`).length, 1, lines.join("\n"));
    assert.equal(lines.length, 5, lines.join("\n"));
  });
}

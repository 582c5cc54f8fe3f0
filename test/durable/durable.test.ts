// Durable runs (agentloop/durable) against a real PostgreSQL, with real child processes killed with
// SIGKILL in the middle of a run. Each test gives DBOS its own schema and drops it afterwards.
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

/** Starts a run that hangs in its third tool call, kills the process with SIGKILL, restarts it. */
async function crashAndRecover(name: string, idempotent: boolean) {
  const { env, file, runId } = setup(name);
  const first = await start({ ...env, START: "1", HANG_AT: "3", IDEMPOTENT: idempotent ? "1" : "0" });
  await waitForOutput(first.process, "hanging 3");
  first.process.kill("SIGKILL");
  await first.output;
  const second = await start({ ...env, START: "0", IDEMPOTENT: idempotent ? "1" : "0" });
  const outcome = parse(await second.output);
  return { outcome, lines: readFileSync(file, "utf8").trim().split("\n"), runId };
}

/** Starts a run whose second call waits for approval, kills the process while it waits, approves from the restarted one. */
async function crashWhileWaiting() {
  const { env, file, runId } = setup("approval");
  const first = await start({ ...env, START: "1", APPROVAL: "1" });
  await waitForOutput(first.process, "approval requested");
  first.process.kill("SIGKILL");
  await first.output;
  const outcome = parse(await (await start({ ...env, START: "0", APPROVAL: "1", DECIDE: "1" })).output);
  return { outcome, lines: readFileSync(file, "utf8").trim().split("\n"), runId };
}

// The flows run at once (each process spends most of its time starting DBOS), each test awaits its own.
let flows: {
  plain: Promise<Outcome>;
  idem: ReturnType<typeof crashAndRecover>;
  nonidem: ReturnType<typeof crashAndRecover>;
  approval: ReturnType<typeof crashWhileWaiting>;
};
before(() => {
  const plain = setup("plain");
  flows = {
    plain: start({ ...plain.env, START: "1", IDEMPOTENT: "1" }).then((started) => started.output).then(parse),
    idem: crashAndRecover("idem", true),
    nonidem: crashAndRecover("nonidem", false),
    approval: crashWhileWaiting(),
  };
  for (const flow of Object.values(flows)) flow.catch(() => undefined);
});

test("a run killed after two of four tool calls finishes after a restart: tools 1-2 ran once, the answer is the uninterrupted one", async () => {
  const uninterrupted = await flows.plain;
  assert.equal(uninterrupted.result.state, "COMPLETED");
  assert.equal(uninterrupted.result.text, "done: step 1 ok | step 2 ok | step 3 ok | step 4 ok");

  const { outcome, lines, runId } = await flows.idem;
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

test("a non-idempotent tool call in flight at the crash is not run again: it gets the Interrupted result and the loop goes on", async () => {
  const { outcome, lines, runId } = await flows.nonidem;
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

test("a run waiting for approval when its process was killed waits again after the restart; the decision resumes it", async () => {
  const uninterrupted = await flows.plain;
  const { outcome, lines, runId } = await flows.approval;
  assert.equal(outcome.result.state, "COMPLETED");
  assert.equal(outcome.result.text, uninterrupted.result.text);
  assert.deepEqual(
    lines.filter((line) => line.startsWith("start")),
    [1, 2, 3, 4].map((n) => `start ${n} ${runId}:call_${n}`),
  );
});

// The mutation runner's test worker (scripts/mutation/worker.mjs, with node:test bundled as
// scripts/mutation/harness.mjs): one process loads a test file once and runs selections of its tests
// again and again, a "mutant" switched on for some runs (npm run mutation; docs/mutation.md).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const harness = fileURLToPath(new URL("../../scripts/mutation/harness.mjs", import.meta.url));
const worker = fileURLToPath(new URL("../../scripts/mutation/worker.mjs", import.meta.url));
const sample = fileURLToPath(new URL("./fixtures/mutation-harness-sample.mjs", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "agentloop-mutation-harness-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

async function bundle() {
  await build({
    entryPoints: [sample],
    outdir: scratch,
    bundle: true,
    format: "esm",
    platform: "node",
    logLevel: "silent",
    plugins: [{ name: "harness", setup: (b) => b.onResolve({ filter: /^node:test$/ }, (args) => (args.importer === harness ? { path: "node:test", external: true } : { path: harness })) }],
  });
  return join(scratch, "mutation-harness-sample.js");
}

type Result = { results: { name: string; status: string; error?: string }[]; outside: string[]; hits: number };
function start(file: string, env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, [worker, file], { stdio: ["ignore", "ignore", "pipe", "ipc"], env: { ...process.env, ...env } });
  const messages: { type: string; id?: number }[] = [];
  const waiters: (() => void)[] = [];
  child.on("message", (message: { type: string }) => {
    messages.push(message);
    for (const wake of waiters.splice(0)) wake();
  });
  async function next(type: string, id?: number) {
    for (;;) {
      const found = messages.find((message) => message.type === type && (id === undefined || message.id === id));
      if (found) return found as unknown as Result & { units: string[] };
      await new Promise<void>((wake) => waiters.push(wake));
    }
  }
  let id = 0;
  return {
    ready: () => next("ready"),
    run: (request: Record<string, unknown>) => {
      child.send({ type: "run", id: ++id, ...request });
      return next("result", id);
    },
    stop: () => new Promise((resolve) => child.once("exit", resolve).send({ type: "stop" })),
  };
}

test("a worker loads the file once and runs any selection again, with or without the mutant", { timeout: 60_000 }, async () => {
  const file = await bundle();
  const worker = start(file);
  const { units } = await worker.ready();
  assert.deepEqual(units, ["adds", "suite > counts its file's setup once per process", "suite > never reaches the mutant"]);

  const all = await worker.run({});
  assert.deepEqual(
    all.results.map((result) => result.status),
    ["passed", "passed", "passed"],
  );
  // The mutant on: its test fails, and the run stops there (bail); its hits are counted.
  const mutated = await worker.run({ mutant: "1", bail: true });
  assert.deepEqual(
    mutated.results.map((result) => [result.name, result.status]),
    [["adds", "failed"]],
  );
  assert.match(mutated.results[0]?.error ?? "", /-1/);
  assert.equal(mutated.hits, 1);
  // Switched off again, in the same process: a selection passes, the file's `before` hook not run again.
  const again = await worker.run({ selection: ["adds", "suite > counts its file's setup once per process"] });
  assert.deepEqual(
    again.results.map((result) => [result.name, result.status]),
    [
      ["adds", "passed"],
      ["suite > counts its file's setup once per process", "passed"],
    ],
  );
  const unreached = await worker.run({ selection: ["suite > never reaches the mutant"], mutant: "1" });
  assert.equal(unreached.hits, 0, "a mutant the run never reached has no hits (the runner then asks a new process)");
  await worker.stop();
});

test("a test whose promise can never settle fails when the event loop empties, not at a timeout", { timeout: 60_000 }, async () => {
  const worker = start(await bundle(), { SAMPLE_PENDING: "1" });
  await worker.ready();
  const started = Date.now();
  const run = await worker.run({ selection: ["a promise that can never settle fails once the event loop is empty"] });
  assert.equal(run.results[0]?.status, "failed");
  assert.match(run.results[0]?.error ?? "", /event loop has nothing left to do/);
  assert.ok(Date.now() - started < 10_000);
  await worker.stop();
});

test("a test that throws or rejects with undefined fails, as under node:test", { timeout: 60_000 }, async () => {
  const worker = start(await bundle(), { SAMPLE_UNDEFINED: "1" });
  await worker.ready();
  const run = await worker.run({ selection: ["throwing undefined fails", "rejecting with undefined fails"] });
  assert.deepEqual(
    run.results.map((result) => [result.name, result.status, result.error]),
    [
      ["throwing undefined fails", "failed", "undefined"],
      ["rejecting with undefined fails", "failed", "undefined"],
    ],
  );
  await worker.stop();
});

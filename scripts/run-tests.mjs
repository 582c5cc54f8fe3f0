// Runs every *.test.ts under src/ and test/ with node's test runner (TypeScript through tsx).
// Usage: node scripts/run-tests.mjs [filter-substring ...]
//
// Tests that start the CLI as a child process (`agentloop run|chat|serve …`) would pay for tsx
// (about 1 s of CPU per child) every time. So the runner bundles src/cli/main.ts with esbuild once,
// at the start of every run (never reused: a stale build is impossible), into a folder of its own
// under node_modules/.cache, and hands its path to the tests in AGENTLOOP_TEST_CLI; the children
// then start as plain node. If the build fails, the tests fall back to tsx, and the runner says so.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

function find(dir, out = []) {
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    if (name === "node_modules") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) find(path, out);
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const CACHE = resolve("node_modules/.cache/agentloop-test");

/** Bundles the CLI for this run; returns its path, or undefined (with the reason printed) to use tsx. */
async function buildCli() {
  // Folders left by runs that were killed (a live run's folder is younger than a day).
  try {
    for (const name of readdirSync(CACHE)) {
      const path = join(CACHE, name);
      if (Date.now() - statSync(path).mtimeMs > 86_400_000) rmSync(path, { recursive: true, force: true });
    }
  } catch {}
  const outdir = join(CACHE, `run-${process.pid}-${Date.now()}`);
  try {
    const { build } = await import("esbuild");
    mkdirSync(outdir, { recursive: true });
    const started = performance.now();
    // Packages stay external (resolved from node_modules as usual); code splitting keeps every
    // lazy import() lazy, as in the compiled package.
    await build({
      entryPoints: ["src/cli/main.ts"],
      outdir,
      bundle: true,
      splitting: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      outExtension: { ".js": ".mjs" },
      logLevel: "silent",
    });
    console.log(`# CLI children: src/cli/main.ts bundled with esbuild for this run (${Math.round(performance.now() - started)} ms), run as plain node`);
    return { cli: join(outdir, "main.mjs"), outdir };
  } catch (error) {
    rmSync(outdir, { recursive: true, force: true });
    console.log(`# CLI children: src/cli/main.ts through tsx (the esbuild bundle failed: ${String(error?.message ?? error).split("\n")[0]})`);
    return undefined;
  }
}

const filters = process.argv.slice(2);
const files = [...find("src"), ...find("test")].filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
const built = await buildCli();
const env = { ...process.env };
delete env.AGENTLOOP_TEST_CLI;
if (built) env.AGENTLOOP_TEST_CLI = built.cli;
let status = 1;
try {
  const result = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=4", "--test-timeout=120000", ...(process.env.AGENTLOOP_TEST_REPORTER ? ["--test-reporter=spec", "--test-reporter-destination=stdout", "--test-reporter=/tmp/rep/file-times.mjs", `--test-reporter-destination=${process.env.AGENTLOOP_TEST_REPORTER}`] : []), ...files], {
    stdio: "inherit",
    env,
  });
  status = result.status ?? 1;
} finally {
  if (built) rmSync(built.outdir, { recursive: true, force: true });
}
process.exit(status);

// The CLI as a user runs it: a real child process.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { cliArgs } from "./helpers.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

function cli(args: string[], env: Record<string, string> = {}) {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", ...env };
  for (const name of ["DEBUG_MOCK_RESPONSES", "MODEL_API_URL", "MODEL_NAME"]) if (!(name in env)) delete childEnv[name];
  const result = spawnSync(process.execPath, cliArgs(args), { cwd: root, env: childEnv, encoding: "utf8", timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

test("agentloop run: the answer streams, then a summary with counts in words (1 model call, 0 waves)", () => {
  const { code, stdout, stderr } = cli(["run", "hi", "--mock", '["Hello there"]']);
  assert.equal(code, 0, stderr);
  assert.equal(stdout, "Hello there\n");
  assert.match(stderr, /^COMPLETED · 1 model call · 0 waves · 0 tool calls · \d+ tokens\n$/);
});

test("agentloop run --json prints one parseable event per line", () => {
  const { code, stdout } = cli(["run", "hi", "--json", "--mock", '["Hello there"]']);
  assert.equal(code, 0);
  const events = stdout.trim().split("\n").map((line) => JSON.parse(line));
  assert.equal(events[0].type, "run-start");
  assert.equal(events.at(-1).type, "run-end");
  assert.equal(events.at(-1).state, "COMPLETED");
  assert.equal(events.filter((event) => event.type === "text-delta").map((event) => event.delta).join(""), "Hello there");
});

test("a limit exits non-zero with the state and reason on stderr", () => {
  const lookup = JSON.stringify({ tool_calls: [{ name: "lookup", arguments: {} }] });
  const { code, stderr } = cli(["run", "look it up", "--max-steps", "1", "--mock", JSON.stringify([lookup, lookup, "never"])]);
  assert.equal(code, 3);
  assert.match(stderr, /agentloop: run ended TURN_LIMIT: maxTurns \(1\) reached/);
});

test("DEBUG_MOCK_RESPONSES drives the run like the seeds' mock, under TOOL_CALL_MODE", () => {
  const { code, stdout, stderr } = cli(["run", "hi"], { DEBUG_MOCK_RESPONSES: '["{}", "Hello! How can I help you?"]', TOOL_CALL_MODE: "action" });
  assert.equal(code, 0, stderr);
  assert.equal(stdout, "Hello! How can I help you?\n");
});

/** The same command line in this process: for help and usage errors, no child process needed. */
async function inProcess(args: string[]) {
  const { runCli } = await import("../../src/cli/program.js");
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } });
  return { code, stdout, stderr };
}

test("bad flags get a clear error and a non-zero exit", async () => {
  const steps = await inProcess(["run", "x", "--max-steps", "zero"]);
  assert.equal(steps.code, 2);
  assert.match(steps.stderr, /--max-steps must be a positive integer, got "zero"/);
  const missing = await inProcess(["run"]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /missing required argument 'prompt'/);
  const unknown = await inProcess(["run", "x", "--frobnicate"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option '--frobnicate'/);
  const input = await inProcess(["run", "x", "--input", "novalue", "--mock", '["a"]']);
  assert.equal(input.code, 2);
  assert.match(input.stderr, /--input expects key=value, got "novalue"/);
});

test("--help lists the flags with examples", async () => {
  const { code, stdout } = await inProcess(["run", "--help"]);
  assert.equal(code, 0);
  for (const flag of ["--model", "--max-steps", "--json", "--mock", "--tool-call-mode"]) assert.match(stdout, new RegExp(flag));
  assert.match(stdout, /Exit codes:/);
});

test("a bad flag through the real binary exits non-zero with the message on stderr", () => {
  const { code, stderr } = cli(["run", "x", "--max-steps", "0"]);
  assert.equal(code, 2);
  assert.match(stderr, /--max-steps must be a positive integer, got "0"/);
});

test("--model with an unknown provider or a missing key fails before any request, naming what to set", async () => {
  const unknown = await inProcess(["run", "hi", "--model", "nosuch:model"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /nosuch/);
  const missingKey = cli(["run", "hi", "--model", "anthropic:claude-sonnet-4-5"], { ANTHROPIC_API_KEY: "" });
  assert.equal(missingKey.code, 2);
  assert.match(missingKey.stderr, /ANTHROPIC_API_KEY/);
  const halfKaos = cli(["run", "hi"], { MODEL_NAME: "llama3.2" });
  assert.equal(halfKaos.code, 2);
  assert.match(halfKaos.stderr, /MODEL_API_URL/);
});

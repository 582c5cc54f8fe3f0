// Review: `agentloop run` interrupted with Ctrl-C (SIGINT) in a real child process.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { cliArgs } from "../cli/helpers.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

test("agentloop run: Ctrl-C while the answer streams aborts the run, exit 130 with the state on stderr", async () => {
  const words = Array.from({ length: 400 }, (_, index) => `word${index}`).join(" ");
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  for (const name of ["DEBUG_MOCK_RESPONSES", "MODEL_API_URL", "MODEL_NAME"]) delete env[name];
  const child = spawn(process.execPath, cliArgs(["run", "hi", "--mock", JSON.stringify([words])]), { cwd: root, env });
  let stdout = "";
  let stderr = "";
  let interrupted = false;
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    if (!interrupted && stdout.includes("word3 ")) {
      interrupted = true;
      child.kill("SIGINT");
    }
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearTimeout(killer);
  assert.ok(interrupted, `no answer text streamed: ${stderr}`);
  assert.equal(code, 130, stderr);
  assert.match(stderr, /run ended ABORTED: interrupted \(Ctrl-C\)/);
  assert.doesNotMatch(stderr, /aborted: aborted/, "the state is said once");
  assert.doesNotMatch(stdout, /word399/, "the stream stopped");
});

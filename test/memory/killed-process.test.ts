import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { Agent, ScriptedModel } from "../../src/index.js";
import { INTERRUPTED_TOOL_RESULT, memoryConfigFromEnv, openMemoryStore, sessionMemory } from "../../src/memory/index.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";
import { tsChild } from "../ts-child.js";

const child = fileURLToPath(new URL("./fixtures/killed-run-child.ts", import.meta.url));
const root = mkdtempSync(join(tmpdir(), "agentloop-killed-"));
after(async () => {
  rmSync(root, { recursive: true, force: true });
  await dropSchemas();
});

/** Starts the child, waits until its tool runs, calls `whileRunning`, then SIGKILLs it. */
async function killMidTool(env: Record<string, string>, whileRunning: () => Promise<void>): Promise<void> {
  const process_ = spawn(process.execPath, await tsChild(child), { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  process_.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => process_.on("exit", (code, signal) => resolve(signal ?? code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      process_.kill("SIGKILL");
      reject(new Error(`the child never ran its tool; stderr: ${stderr}`));
    }, 60_000);
    process_.stdout.on("data", (chunk) => {
      stdout += chunk;
      if (stdout.includes("TOOL_RUNNING")) {
        clearTimeout(timer);
        resolve();
      }
    });
    process_.on("exit", () => {
      clearTimeout(timer);
      reject(new Error(`the child exited early; stderr: ${stderr}`));
    });
  });
  try {
    await whileRunning();
  } finally {
    process_.kill("SIGKILL");
  }
  assert.equal(await exited, "SIGKILL");
}

for (const variant of ["embedded", "postgres"] as const) {
  describe(`a process killed mid-run (${variant} store)`, () => {
    it("leaves a session that loads cleanly and can be continued", async () => {
      const env: Record<string, string> =
        variant === "embedded"
          ? { MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "memory.db") }
          : { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("killed") };
      const logged = ["run_started", "user_message", "agent_response", "run_ended", "run_started", "user_message", "tool_call"];
      await killMidTool({ ...env, SESSION_ID: "killed", MEMORY_ENABLED: "true" }, async () => {
        // While the child runs, another process reads its sessions (a CLI next to a server).
        const config = memoryConfigFromEnv(env);
        const reader = await openMemoryStore(config);
        try {
          assert.deepEqual(
            (await reader.events("killed")).map((event) => event.event_type),
            logged,
          );
        } finally {
          await reader.close();
        }
      });

      // The dead process's last transaction, if any, is rolled back from the WAL here.
      const store = await openMemoryStore(memoryConfigFromEnv(env));
      try {
        const events = await store.events("killed");
        assert.deepEqual(
          events.map((event) => event.event_type),
          logged,
        );
        const memory = sessionMemory(store);
        const expected = [
          { role: "user", content: "hi" },
          { role: "assistant", content: [{ type: "text", text: "Hello!" }] },
          { role: "user", content: "run the slow job" },
          { role: "assistant", content: [{ type: "tool-call", id: "job_1", name: "slow_job", arguments: '{"size":3}' }] },
          { role: "tool", toolCallId: "job_1", toolName: "slow_job", content: INTERRUPTED_TOOL_RESULT, isError: true },
        ];
        assert.deepEqual(await memory.loadHistory("killed"), expected);

        const model = new ScriptedModel(["The job was interrupted; I can restart it."]);
        const result = await new Agent({ model, memory }).run("what happened?", { sessionId: "killed" });
        assert.equal(result.state, "COMPLETED");
        assert.deepEqual(model.requests[0].messages, [...expected, { role: "user", content: "what happened?" }]);
        const after = await store.events("killed", { afterSeq: events.at(-1)!.seq });
        assert.deepEqual(
          after.map((event) => event.event_type),
          ["run_started", "user_message", "agent_response", "run_ended"],
        );
      } finally {
        await store.close();
      }
    });
  });
}

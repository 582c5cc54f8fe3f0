// The crash-consistency check, for any durable store: `kill -9` a serving `agentloop serve` child under
// concurrent streamed chats, then every run a client received in full ([DONE]) must be complete in the
// store (run_started … run_ended). A store joins by calling `crashConsistency` with its environment.
import assert from "node:assert/strict";
import { it } from "node:test";
import type { MemoryStore } from "../../src/memory/index.js";
import { cleanEnv, spawnCli } from "../cli/helpers.js";

export interface CrashStore {
  /** The MEMORY_* variables of the child. */
  env: Record<string, string>;
  /** Opens the store the child wrote (after it died). */
  open(): Promise<MemoryStore>;
}

export interface CrashOptions {
  /** Clients streaming chats at once (default 20). */
  clients?: number;
  /** Acknowledged runs to wait for before the kill (default 40). */
  acknowledgedBeforeKill?: number;
}

/** One streamed chat; resolves true once `[DONE]` arrived (the run was acknowledged), false if the stream broke. */
async function streamedChat(url: string, sessionId: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: `question of ${sessionId}` }], stream: true, session_id: sessionId }),
    });
    if (response.status !== 200) return false;
    const text = await response.text();
    return text.endsWith("data: [DONE]\n\n") && text.includes('"finish_reason":"stop"');
  } catch {
    return false;
  }
}

export function crashConsistency(label: string, store: () => Promise<CrashStore>, options: CrashOptions = {}): void {
  const clients = options.clients ?? 20;
  const wanted = options.acknowledgedBeforeKill ?? 40;
  it(`${label}: after kill -9 under ${clients} concurrent streams, every acknowledged run is complete in the store`, async () => {
    const { env, open } = await store();
    const cli = spawnCli(
      ["serve", "--port", "0", "--host", "127.0.0.1", "--json"],
      cleanEnv({ AGENT_NAME: "crash", ...env, DEBUG_MOCK_RESPONSES: JSON.stringify(["the acknowledged answer"]) }),
    );
    const acknowledged: string[] = [];
    let started = 0;
    let killed = false;
    try {
      const [, url] = (await cli.waitFor(/"event":"listening".*"url":"([^"]+)"/, "stdout", 60_000)) as RegExpMatchArray;
      let reached!: () => void;
      const enough = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const client = async (index: number) => {
        while (!killed) {
          const sessionId = `crash-${index}-${started++}`;
          if (await streamedChat(url, sessionId)) {
            if (killed) return; // acknowledged after the kill cannot be: the process is gone
            acknowledged.push(sessionId);
            if (acknowledged.length >= wanted) reached();
          }
        }
      };
      const running = Array.from({ length: clients }, (_, index) => client(index));
      await enough;
      // Mid-traffic: runs are streaming, some writing, some acknowledged a moment ago.
      cli.child.kill("SIGKILL");
      killed = true;
      assert.equal((await cli.exited).signal, "SIGKILL");
      await Promise.all(running);
    } finally {
      killed = true;
      cli.child.kill("SIGKILL");
    }
    const opened = await open();
    try {
      const incomplete: string[] = [];
      for (const sessionId of acknowledged) {
        const events = (await opened.events(sessionId)).map((event) => event.event_type);
        const complete =
          events[0] === "run_started" && events.includes("user_message") && events.includes("agent_response") && events.at(-1) === "run_ended";
        if (!complete) incomplete.push(`${sessionId}: ${events.join(",") || "nothing stored"}`);
      }
      assert.ok(acknowledged.length >= wanted, `only ${acknowledged.length} runs acknowledged`);
      assert.deepEqual(incomplete, [], `${incomplete.length} of ${acknowledged.length} acknowledged runs are incomplete in the store`);
    } finally {
      await opened.close();
    }
  });
}

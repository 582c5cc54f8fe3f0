// A chat without a session id gets a session the server just made. Its cross-process lock (another
// process on the same SQLite file must wait its turn) is taken with the run's first write, not
// before the model call: held once the run's start is written (after startWriteDelayMs), given
// back once the answer is stored. A run short enough to be written whole in that first write (its
// start held to its run_ended) takes no lock at all: nothing of it is in the file before.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { startTestServer, type TestServer } from "./helpers.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the lock of a session the server just made", () => {
  let folder: string;
  let test: TestServer;
  before(async () => {
    folder = mkdtempSync(join(tmpdir(), "agentloop-fresh-lock-"));
    // 40 words, 50 ms apart: the answer streams for ~2 s.
    const answer = Array.from({ length: 40 }, (_, index) => `word${index}`).join(" ");
    test = await startTestServer({ MEMORY_TYPE: "embedded", MEMORY_PATH: folder }, { build: { model: new ScriptedModel([answer], { chunkDelayMs: 50 }) } });
  });
  after(async () => {
    await test.server.close({ graceMs: 0 });
    rmSync(folder, { recursive: true, force: true });
  });

  it("is held while the run goes on (once its start is written) and free once the answer is stored", async () => {
    const response = await fetch(`${test.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "hello" }] }),
    });
    const sessionId = response.headers.get("x-session-id");
    assert.ok(sessionId);
    // Another connection to the same file, as `agentloop run --session` in another process would be.
    const other = await openEmbeddedStore({ path: join(folder, "memory.db") });
    try {
      // The run's start is written after up to 250 ms, in the same transaction as the lock.
      const deadline = Date.now() + 5000;
      while ((await other.events(sessionId)).length === 0) {
        assert.ok(Date.now() < deadline, "the run's start was never written");
        await sleep(20);
      }
      await assert.rejects(other.lockSession!(sessionId, AbortSignal.timeout(200)), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error), String(error));
        assert.equal(error.kind, "aborted");
        return true;
      });
      const body = await response.text();
      assert.match(body, /data: \[DONE\]/);
      const events = (await other.events(sessionId)).map((event) => event.event_type);
      assert.deepEqual(events, ["run_started", "user_message", "agent_response", "run_ended"]);
      // Given back right after the answer (a group commit later): a second attempt gets it.
      const release = await other.lockSession!(sessionId, AbortSignal.timeout(5000));
      await release();
    } finally {
      await other.close();
    }
  });
});

describe("a short run in a session the server just made", () => {
  it("takes no lock (its one write is the whole run); a chat naming its session does", async () => {
    const folder = mkdtempSync(join(tmpdir(), "agentloop-fresh-nolock-"));
    const store = await openEmbeddedStore({ path: join(folder, "memory.db") });
    const locked: string[] = [];
    const lockSession = store.lockSession.bind(store);
    store.lockSession = (sessionId, signal) => {
      locked.push(sessionId);
      return lockSession(sessionId, signal);
    };
    const test = await startTestServer({}, { memory: store, build: { model: new ScriptedModel(Array(2).fill("fine")) } });
    try {
      const chat = (headers: Record<string, string> = {}) =>
        fetch(`${test.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ messages: [{ role: "user", content: "hello" }] }),
        });
      const fresh = await chat();
      assert.equal(fresh.status, 200);
      const sessionId = fresh.headers.get("x-session-id")!;
      assert.deepEqual(
        (await store.events(sessionId)).map((event) => event.event_type),
        ["run_started", "user_message", "agent_response", "run_ended"],
      );
      assert.deepEqual(locked, []);
      const named = await chat({ "x-session-id": "named" });
      assert.equal(named.status, 200);
      assert.deepEqual(locked, ["named"]);
      // Nothing left locked: another holder gets both at once.
      for (const id of [sessionId, "named"]) await (await store.lockSession(id, AbortSignal.timeout(5000)))();
    } finally {
      await test.server.close({ graceMs: 0 });
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

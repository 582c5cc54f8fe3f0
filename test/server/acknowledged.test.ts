// Issue 12, failure 2: an answer is acknowledged ([DONE], the JSON answer) only once its events are stored,
// and a failed write is never silent (logged, an error to the client, /ready degraded).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { InMemoryStore, type MemoryEvent, type NewMemoryEvent } from "../../src/memory/index.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

/** A store whose `run_ended` appends wait for `release()` or fail while `failing` is set. */
class FaultyStore extends InMemoryStore {
  failing = false;
  held: Promise<void> | undefined;
  private heldCalled: Array<() => void> = [];
  private releaseHeld = () => {};
  /** Holds the next run_ended appends until `release()`; resolves when one arrives. */
  hold(): Promise<void> {
    this.held = new Promise((resolve) => {
      this.releaseHeld = resolve;
    });
    return new Promise((resolve) => this.heldCalled.push(resolve));
  }
  release(): void {
    this.held = undefined;
    this.releaseHeld();
  }
  override async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    if (events.some((event) => event.event_type === "run_ended")) {
      if (this.failing) throw new Error("disk full");
      if (this.held) {
        for (const called of this.heldCalled.splice(0)) called();
        await this.held;
      }
    }
    return super.append(sessionId, events);
  }
}

const chat = (sessionId: string, stream: boolean) => ({ messages: [{ role: "user", content: "hi" }], session_id: sessionId, stream });

describe("acknowledged only once stored", () => {
  let test: TestServer;
  const store = new FaultyStore();
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "ack", DEBUG_MOCK_RESPONSES: JSON.stringify(Array(50).fill("the answer")) }, { memory: store });
  });
  after(() => test.close());

  it("sends [DONE] only after run_ended is written", async () => {
    const appending = store.hold();
    const response = await postJson(`${test.url}/v1/chat/completions`, chat("held-stream", true));
    const text = response.text();
    await appending;
    // The write is held: the stream must not end (the old server sent [DONE] at run-end, before the write).
    const early = await Promise.race([text.then(() => "ended"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 300))]);
    assert.equal(early, "waiting");
    // A one-turn run is one append, to its run_ended: nothing of it is stored yet.
    assert.deepEqual(await store.events("held-stream"), []);
    store.release();
    assert.match(await text, /"finish_reason":"stop"[\s\S]*data: \[DONE\]\n\n$/);
    assert.equal((await store.events("held-stream")).at(-1)?.event_type, "run_ended");
  });

  it("sends the JSON answer only after run_ended is written", async () => {
    const appending = store.hold();
    const response = postJson(`${test.url}/v1/chat/completions`, chat("held-json", false));
    await appending;
    const early = await Promise.race([response.then(() => "answered"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 300))]);
    assert.equal(early, "waiting");
    store.release();
    assert.equal((await response).status, 200);
    assert.equal((await store.events("held-json")).at(-1)?.event_type, "run_ended");
  });

  it("a failed write: logged, an error chunk then [DONE] for a stream, 503 for JSON, /ready degraded until writes work again", async () => {
    store.failing = true;
    try {
      const streamed = await (await postJson(`${test.url}/v1/chat/completions`, chat("fail-stream", true))).text();
      assert.match(streamed, /"content":"answer"/);
      assert.doesNotMatch(streamed, /finish_reason":"stop"/);
      assert.match(streamed, /data: \{"error":\{"message":"the answer could not be stored \(memory store memory\): disk full","type":"server_error","param":null,"code":"memory_write_failed"\}\}\n\ndata: \[DONE\]\n\n$/);
      await test.waitForLog(/session fail-stream: its events could not be stored: disk full/);

      const json = await postJson(`${test.url}/v1/chat/completions`, chat("fail-json", false));
      assert.equal(json.status, 503);
      assert.equal(((await json.json()) as { error: { code: string } }).error.code, "memory_write_failed");

      // A new chat (the server makes its session): its one write, the whole run, fails; told the same way.
      const fresh = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], stream: false });
      assert.equal(fresh.status, 503);
      assert.equal(((await fresh.json()) as { error: { code: string } }).error.code, "memory_write_failed");
      await test.waitForLog(new RegExp(`session ${fresh.headers.get("x-session-id")}: its events could not be stored: disk full`));

      const ready = (await (await fetch(`${test.url}/ready`)).json()) as { status: string; unavailable: Array<{ kind: string; reason: string }> };
      assert.equal(ready.status, "degraded");
      assert.equal(ready.unavailable[0].kind, "memory");
      assert.match(ready.unavailable[0].reason, /disk full/);
    } finally {
      store.failing = false;
    }
    assert.equal((await postJson(`${test.url}/v1/chat/completions`, chat("fine-again", false))).status, 200);
    assert.equal(((await (await fetch(`${test.url}/ready`)).json()) as { status: string }).status, "ready");
  });
});

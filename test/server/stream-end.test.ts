// A streamed chat ends at the run's end, not after its memory writes; the memory endpoints wait for
// those writes, so a client reading right after its stream ended sees all of them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { InMemoryStore, type MemoryEvent, type MemoryStore, type NewMemoryEvent } from "../../src/memory/index.js";
import { script, startTestServer } from "./helpers.js";

/** A store whose appends of the run's end wait until the test opens the gate. */
function gatedStore() {
  const inner = new InMemoryStore();
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let waiting = 0;
  const store: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
    async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
      if (events.some((event) => event.event_type === "agent_response" || event.event_type === "run_ended")) {
        waiting++;
        await gate;
      }
      return inner.append(sessionId, events);
    },
  });
  return { store, open, waiting: () => waiting };
}

/** One streamed chat in `session`; resolves with the whole SSE body. */
async function streamChat(url: string, session: string, content: string): Promise<string> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-session-id": session },
    body: JSON.stringify({ model: "agent", stream: true, messages: [{ role: "user", content }] }),
  });
  return response.text();
}

test("the SSE stream ends at run-end while the store still writes; /memory/events then waits for the writes", async () => {
  const { store, open, waiting } = gatedStore();
  const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("All done.") }, { memory: store });
  try {
    const body = await streamChat(test.url, "gated", "finish up");
    assert.match(body, /"finish_reason":"stop"/);
    assert.ok(body.trimEnd().endsWith("data: [DONE]"));
    assert.equal(waiting(), 1, "the answer's write is still waiting on the store when the stream ended");
    let answered = false;
    const reading = fetch(`${test.url}/memory/events?session_id=gated`).then(async (result) => {
      answered = true;
      return (await result.json()) as { events: Array<{ event_type: string }> };
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(answered, false, "the read waits for the run's writes");
    open();
    const { events } = await reading;
    assert.deepEqual(
      events.map((event) => event.event_type),
      ["run_started", "user_message", "agent_response", "run_ended"],
    );
  } finally {
    open();
    await test.close();
  }
});

test("a read of another session is not held by one session's pending writes", async () => {
  const { store, open } = gatedStore();
  const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("x") }, { memory: store });
  try {
    // Session "other" has writes waiting at the gate; a read of another session is not held by them.
    await streamChat(test.url, "other", "go");
    const started = performance.now();
    const result = await fetch(`${test.url}/memory/events?session_id=other-missing`);
    assert.equal(result.status, 200);
    assert.equal(((await result.json()) as { total: number }).total, 0);
    assert.ok(performance.now() - started < 1000, "a read of another session does not wait for this one's writes");
  } finally {
    open();
    await test.close();
  }
});

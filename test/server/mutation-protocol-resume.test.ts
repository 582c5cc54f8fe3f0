// The UI message stream followed while it runs (`GET /api/chat/{id}/stream`, src/server/routes/ui-chat.ts
// and protocol-stream.ts's ReplayableStreams), and a client leaving through `AgentServer.fetch`
// (protocol-post.ts's Hono door, chat completions' web route): the model holds its answer at a gate
// the test opens, so the stream is caught mid-answer without sleeps.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { InMemoryStore, type MemoryEvent, type NewMemoryEvent } from "../../src/memory/index.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

/** A model that says "part one", waits at a gate, then says " part two"; one gate per call. */
function gatedModel() {
  const gates: Array<{ reached: Promise<void>; open: () => void }> = [];
  let arrive: () => void = () => undefined;
  let next = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  return {
    /** Resolves once a call reached its gate; returns the opener. */
    async atGate(): Promise<() => void> {
      await next;
      next = new Promise<void>((resolve) => {
        arrive = resolve;
      });
      return gates.shift()!.open;
    },
    model: {
      provider: "test",
      modelId: "gated",
      async *stream(_request: unknown, options?: { signal?: AbortSignal }) {
        yield { type: "response-start" as const, model: "gated" };
        yield { type: "text-start" as const, id: "t" };
        yield { type: "text-delta" as const, id: "t", delta: "part one" };
        let open: () => void = () => undefined;
        const opened = new Promise<void>((resolve) => {
          open = resolve;
        });
        gates.push({ reached: Promise.resolve(), open });
        arrive();
        const signal = options?.signal;
        await new Promise<void>((resolve, reject) => {
          void opened.then(resolve);
          signal?.addEventListener("abort", () => reject(signal.reason ?? new Error("aborted")), { once: true });
        });
        yield { type: "text-delta" as const, id: "t", delta: " part two" };
        yield { type: "text-end" as const, id: "t" };
        yield { type: "finish" as const, reason: { unified: "stop" as const, raw: "stop" } };
      },
    },
  };
}

/** A store that tells when a session's run ended (its `run_ended` content). */
class EndingStore extends InMemoryStore {
  private waiting = new Map<string, (content: unknown) => void>();
  ended(sessionId: string): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.waiting.set(sessionId, resolve as (content: unknown) => void));
  }
  override async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    const stored = await super.append(sessionId, events);
    const end = events.find((event) => event.event_type === "run_ended");
    if (end) this.waiting.get(sessionId)?.(end.content);
    return stored;
  }
}

/** The SSE data events of a body (`[DONE]` kept as is). */
const events = (text: string) =>
  text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => (block.slice(6) === "[DONE]" ? { type: "[DONE]" } : (JSON.parse(block.slice(6)) as { type: string; delta?: string })));

const uiBody = (id: string) => ({ id, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }], trigger: "submit-message" });

describe("GET /api/chat/{id}/stream while the answer runs", () => {
  let test: TestServer;
  const gated = gatedModel();
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "resumable" }, { build: { model: gated.model } });
  });
  after(() => test.close());

  it("replays the stream from its start with the stream's headers, follows it to its end, then answers 204", async () => {
    const posted = await postJson(`${test.url}/api/chat`, uiBody("resume-me"));
    assert.equal(posted.status, 200);
    const open = await gated.atGate();
    const [first, second] = await Promise.all([fetch(`${test.url}/api/chat/resume-me/stream`), fetch(`${test.url}/api/chat/resume-me/stream`)]);
    for (const followed of [first, second]) {
      assert.equal(followed.status, 200);
      assert.match(followed.headers.get("content-type") ?? "", /^text\/event-stream/);
      assert.equal(followed.headers.get("x-vercel-ai-ui-message-stream"), "v1");
      assert.equal(followed.headers.get("x-session-id"), "resume-me");
    }
    open();
    const original = events(await posted.text());
    for (const followed of [first, second]) {
      const replayed = events(await followed.text());
      assert.deepEqual(replayed, original);
    }
    assert.equal(
      original
        .filter((event) => event.type === "text-delta")
        .map((event) => event.delta)
        .join(""),
      "part one part two",
    );
    assert.deepEqual(
      original.slice(-2).map((event) => event.type),
      ["finish", "[DONE]"],
    );
    const afterwards = await fetch(`${test.url}/api/chat/resume-me/stream`);
    assert.equal(afterwards.status, 204);
  });
});

describe("a client leaving through AgentServer.fetch", () => {
  let server: AgentServer;
  const store = new EndingStore();
  const gated = gatedModel();
  before(async () => {
    server = await createAgentServer({ env: { AGENT_NAME: "leaver" }, memory: store, build: { model: gated.model }, log: () => undefined });
  });
  after(() => server.close({ graceMs: 100 }));

  const request = (path: string, body: object, signal?: AbortSignal) =>
    server.fetch(new Request(`http://agent${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal }));

  it("AG-UI: the stream cancelled aborts the run", async () => {
    const ended = store.ended("leave-ag");
    const response = await request("/ag-ui", { threadId: "leave-ag", runId: "r1", state: {}, messages: [{ id: "u1", role: "user", content: "hi" }], tools: [], context: [], forwardedProps: {} });
    await gated.atGate();
    await response.body!.cancel();
    assert.equal((await ended).state, "ABORTED");
  });

  it("chat completions, streamed: the stream cancelled aborts the run", async () => {
    const ended = store.ended("leave-stream");
    const response = await request("/v1/chat/completions", { session_id: "leave-stream", stream: true, messages: [{ role: "user", content: "hi" }] });
    await gated.atGate();
    await response.body!.cancel();
    assert.equal((await ended).state, "ABORTED");
  });

  it("chat completions, JSON: the request's signal aborted aborts the run", async () => {
    const ended = store.ended("leave-json");
    const controller = new AbortController();
    const response = request("/v1/chat/completions", { session_id: "leave-json", messages: [{ role: "user", content: "hi" }] }, controller.signal);
    await gated.atGate();
    controller.abort();
    assert.equal((await ended).state, "ABORTED");
    await response.then(
      (answer) => answer.body?.cancel(),
      () => undefined,
    );
  });
});

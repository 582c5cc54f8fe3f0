// protocol-stream.ts's ReplayableStreams with two UI streams of one session (the second queued behind
// the first): `GET /api/chat/{id}/stream` follows the one running, then the next one once it runs;
// and the UI streams through `AgentServer.fetch` (web stream bodies) carry no empty chunk. The model
// holds each answer at a gate the test opens: no sleeps.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Model } from "../../src/model/model.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

/** A model that says "<n>: one", waits at its call's gate, then says " two" (n counts the calls from 1). */
function gatedModel() {
  const reached: Array<(open: () => void) => void> = [];
  const arrivals: Array<Promise<() => void>> = [];
  let calls = 0;
  const arrival = (index: number) => {
    while (arrivals.length <= index) arrivals.push(new Promise((resolve) => reached.push(resolve)));
    return arrivals[index]!;
  };
  const model: Model = {
    provider: "test",
    modelId: "gated",
    async *stream(request) {
      const call = calls++;
      yield { type: "text-start", id: "t" };
      yield { type: "text-delta", id: "t", delta: `${call + 1}: one` };
      await new Promise<void>((resolve, reject) => {
        arrival(call);
        reached[call]!(resolve);
        request.signal?.addEventListener("abort", () => reject(request.signal?.reason), { once: true });
      });
      yield { type: "text-delta", id: "t", delta: " two" };
      yield { type: "text-end", id: "t" };
      yield { type: "finish", reason: { unified: "stop", raw: "stop" } };
    },
  };
  /** Resolves with the opener of call `index` (from 0) once it is at its gate. */
  return { model, atGate: (index: number) => arrival(index) };
}

/** The text deltas of a UI message stream's body. */
const deltas = (text: string) =>
  text
    .split("\n\n")
    .filter((block) => block.startsWith("data: {"))
    .map((block) => JSON.parse(block.slice(6)) as { type: string; delta?: string })
    .filter((event) => event.type === "text-delta")
    .map((event) => event.delta)
    .join("");

const uiBody = (id: string, text: string) => ({ id, messages: [{ id: `u-${text}`, role: "user", parts: [{ type: "text", text }] }], trigger: "submit-message" });

describe("two UI streams of one session", () => {
  let test: TestServer;
  const gated = gatedModel();
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "queued-streams" }, { build: { model: gated.model } });
  });
  after(() => test.close());

  it("the follow route replays the running stream, not the one queued behind it; once the first ends, the second; then 204", async () => {
    const first = await postJson(`${test.url}/api/chat`, uiBody("two-streams", "first"));
    assert.equal(first.status, 200);
    const openFirst = await gated.atGate(0);
    const second = await postJson(`${test.url}/api/chat`, uiBody("two-streams", "second"));
    assert.equal(second.status, 200);
    const followFirst = await fetch(`${test.url}/api/chat/two-streams/stream`);
    assert.equal(followFirst.status, 200);
    openFirst();
    assert.equal(deltas(await first.text()), "1: one two");
    assert.equal(deltas(await followFirst.text()), "1: one two");

    const openSecond = await gated.atGate(1);
    const followSecond = await fetch(`${test.url}/api/chat/two-streams/stream`);
    assert.equal(followSecond.status, 200);
    openSecond();
    assert.equal(deltas(await second.text()), "2: one two");
    assert.equal(deltas(await followSecond.text()), "2: one two");
    assert.equal((await fetch(`${test.url}/api/chat/two-streams/stream`)).status, 204);
  });
});

describe("UI streams through AgentServer.fetch", () => {
  let server: AgentServer;
  const gated = gatedModel();
  before(async () => {
    server = await createAgentServer({ env: { AGENT_NAME: "web-chunks", MEMORY_TYPE: "memory" }, build: { model: gated.model }, log: () => undefined });
  });
  after(() => server.close({ graceMs: 100 }));

  /** Every chunk of a body, as text; none may be empty (a reader would get a read of 0 bytes). */
  async function chunks(response: Response): Promise<string[]> {
    const read: string[] = [];
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      assert.ok(chunk.byteLength > 0, `an empty chunk after ${JSON.stringify(read.join(""))}`);
      read.push(decoder.decode(chunk, { stream: true }));
    }
    return read;
  }
  const post = (path: string, body: object) =>
    server.fetch(new Request(`http://agent${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));

  it("/api/chat, its follow route mid-answer, and /ag-ui: the whole answer, no empty chunk", async () => {
    const posted = await post("/api/chat", uiBody("web-chunks", "hi"));
    const open = await gated.atGate(0);
    // Followed in a later macrotask: the stream's last tick is recorded by then.
    await new Promise((resolve) => setImmediate(resolve));
    const followed = await server.fetch(new Request("http://agent/api/chat/web-chunks/stream"));
    assert.equal(followed.status, 200);
    open();
    const [original, replayed] = await Promise.all([chunks(posted), chunks(followed)]);
    assert.equal(deltas(original.join("")), "1: one two");
    assert.equal(replayed.join(""), original.join(""));

    const agUi = await post("/ag-ui", { threadId: "web-chunks-ag", runId: "r1", state: {}, messages: [{ id: "u1", role: "user", content: "hi" }], tools: [], context: [], forwardedProps: {} });
    const reading = chunks(agUi);
    (await gated.atGate(1))();
    assert.match((await reading).join(""), /"delta":" two"/);
  });
});

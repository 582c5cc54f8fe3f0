// A UI protocol stream whose run fails outside the model (src/server/protocol-stream.ts, the routes'
// `failure`): the answer's events cannot be stored. The stream still ends the protocol's way, with the
// error's code: AG-UI's RUN_ERROR, the UI message stream's error chunk then [DONE].
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { InMemoryStore, type MemoryEvent, type NewMemoryEvent } from "../../src/memory/index.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

/** A store whose `run_ended` appends fail. */
class FullDisk extends InMemoryStore {
  override async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    if (events.some((event) => event.event_type === "run_ended")) throw new Error("disk full");
    return super.append(sessionId, events);
  }
}

/** The SSE data events of a body, parsed (`[DONE]` kept as is). */
const events = (text: string): unknown[] =>
  text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => (block.slice(6) === "[DONE]" ? "[DONE]" : JSON.parse(block.slice(6))));

describe("a UI protocol stream whose answer cannot be stored", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "full", DEBUG_MOCK_RESPONSES: JSON.stringify(Array(10).fill("the answer")) }, { memory: new FullDisk() });
  });
  after(() => test.close());

  it("/ag-ui: RUN_STARTED, the answer, then RUN_ERROR with the error's code", async () => {
    const body = { threadId: "full-ag", runId: "r1", state: {}, messages: [{ id: "u1", role: "user", content: "hi" }], tools: [], context: [], forwardedProps: {} };
    const list = events(await (await postJson(`${test.url}/ag-ui`, body)).text()) as Array<{ type: string; message?: string; code?: string }>;
    assert.equal(list[0].type, "RUN_STARTED");
    const last = list.at(-1)!;
    assert.equal(last.type, "RUN_ERROR");
    assert.equal(last.code, "memory_write_failed");
    assert.match(last.message ?? "", /could not be stored.*disk full/);
    assert.ok(!list.some((event) => event.type === "RUN_FINISHED"));
  });

  it("/api/chat: the answer, then an error chunk and [DONE]", async () => {
    const body = { id: "full-ui", messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }], trigger: "submit-message" };
    const list = events(await (await postJson(`${test.url}/api/chat`, body)).text()) as Array<{ type: string; errorText?: string } | string>;
    assert.equal(list.at(-1), "[DONE]");
    const error = list.at(-2) as { type: string; errorText?: string };
    assert.equal(error.type, "error");
    assert.match(error.errorText ?? "", /could not be stored.*disk full/);
    assert.ok(!list.some((event) => typeof event === "object" && event.type === "finish"));
  });
});

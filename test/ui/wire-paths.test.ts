import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { AgentServer } from "../../src/server/index.js";
import { postJson, TRICKY, type TestServer, twinServers } from "../server/helpers.js";

// POST /api/chat and POST /ag-ui have two doors, as chat completions has: straight on node:http when
// listening (the hot path) and the Hono route behind `AgentServer.fetch`. Both answer alike.

const uiChatBody = (id: string) => JSON.stringify({ id, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "say it" }] }], trigger: "submit-message", messageId: "m1" });
const agUiBody = (id: string) => JSON.stringify({ threadId: id, runId: "r1", state: {}, messages: [{ id: "u1", role: "user", content: "say it" }], tools: [], context: [], forwardedProps: {} });

/** The SSE data events of a body, parsed (`[DONE]` kept as is). */
function events(text: string): unknown[] {
  return text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => {
      assert.ok(block.startsWith("data: "), `an SSE data event: ${block}`);
      const data = block.slice(6);
      return data === "[DONE]" ? data : JSON.parse(data);
    });
}

/** What a client reads of a stream: the event types in order and the text of the deltas. */
function reading(list: unknown[]): { types: string[]; text: string } {
  const chunks = list.map((event) => (event === "[DONE]" ? { type: "[DONE]" } : (event as { type: string; delta?: string })));
  return { types: chunks.map((chunk) => chunk.type), text: chunks.map((chunk) => (chunk.type.toLowerCase().includes("content") || chunk.type === "text-delta" ? (chunk.delta ?? "") : "")).join("") };
}

describe("the UI protocols: the node:http hot path and fetch() answer alike", () => {
  let test: TestServer;
  let embedded: AgentServer;
  before(async () => {
    ({ test, embedded } = await twinServers());
  });
  after(async () => {
    await test.close();
    await embedded.close({ graceMs: 100 });
  });

  for (const [path, body, contentType] of [
    ["/api/chat", uiChatBody, "text/event-stream"],
    ["/ag-ui", agUiBody, "text/event-stream"],
  ] as const) {
    it(`${path}: the same stream (event types, text) and headers on both doors`, async () => {
      const overHttp = await postJson(`${test.url}${path}`, body(`wire${path.replace(/\//g, "-")}`));
      const throughFetch = await embedded.fetch(new Request(`http://agent${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: body(`wire${path.replace(/\//g, "-")}`) }));
      const read = [];
      for (const response of [overHttp, throughFetch]) {
        assert.equal(response.status, 200);
        assert.match(response.headers.get("content-type") ?? "", new RegExp(`^${contentType}`));
        assert.equal(response.headers.get("x-session-id"), `wire${path.replace(/\//g, "-")}`);
        read.push(reading(events(await response.text())));
      }
      assert.deepEqual(read[0], read[1]);
      assert.equal(read[0].text, TRICKY);
    });

    it(`${path}: the same 4xx answers on both doors (413 over the limit, 400 for bad JSON), and serves on after them`, async () => {
      const big = JSON.stringify({ id: "x", messages: [{ id: "u", role: "user", parts: [{ type: "text", text: "z".repeat(3000) }] }] });
      for (const [text, status, code] of [
        [big, 413, "request_too_large"],
        ["{nope", 400, "invalid_json"],
      ] as const) {
        const overHttp = await postJson(`${test.url}${path}`, text);
        const throughFetch = await embedded.fetch(new Request(`http://agent${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: text }));
        for (const response of [overHttp, throughFetch]) {
          assert.equal(response.status, status);
          assert.equal(((await response.json()) as { error: { code: string } }).error.code, code);
        }
      }
      const after = await postJson(`${test.url}${path}`, body(`again${path.replace(/\//g, "-")}`));
      assert.equal(after.status, 200);
      await after.text();
    });
  }
});

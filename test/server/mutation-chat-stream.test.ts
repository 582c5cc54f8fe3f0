// src/server/chat-stream.ts as a client sees it: a body starting with a UTF-8 byte order mark is read
// as JSON on the hot path as through `fetch` (Request.text() drops the mark too), and a stream read
// through `AgentServer.fetch` whose reader is cancelled aborts its run as a client leaving does.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import { heldModel, startTestServer, type TestServer } from "./helpers.js";

describe("a request body with a byte order mark", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "bom" }, { build: { model: new ScriptedModel(["marked", "marked again"], { continueAcrossRuns: true }) } });
  });
  after(() => test.close());

  it("is JSON all the same, on node:http and through fetch", async () => {
    const body = `\ufeff${JSON.stringify({ messages: [{ role: "user", content: "hi" }] })}`;
    const init = { method: "POST", headers: { "content-type": "application/json" }, body };
    for (const response of [await fetch(`${test.url}/v1/chat/completions`, init), await test.server.fetch(new Request("http://agent/v1/chat/completions", init))]) {
      const text = await response.text();
      assert.equal(response.status, 200, text);
      assert.match((JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, /^marked/);
    }
  });
});

describe("a stream read through AgentServer.fetch", () => {
  it("cancelled by its reader: the run is aborted and logged as the client's leaving", async () => {
    const held = heldModel();
    const test = await startTestServer({ AGENT_NAME: "reader" }, { build: { model: held.model } });
    try {
      const response = await test.server.fetch(
        new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "cancelled", stream: true, messages: [{ role: "user", content: "hi" }] }) }),
      );
      assert.equal(response.status, 200);
      const reader = response.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      assert.match(first, /"role":"assistant"/);
      await held.reached;
      await reader.cancel();
      const line = await test.waitForLog(/session cancelled ABORTED/);
      assert.match(line, /^\[reader\] run \S+ session cancelled ABORTED: .* \(client disconnected\)$/);
    } finally {
      await test.close();
    }
  });
});

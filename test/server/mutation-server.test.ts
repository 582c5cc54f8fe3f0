// src/server/server.ts as an embedder sees it: `listen` (its URL, a second call, an address it cannot
// take), and `close` (the grace period and its log lines, a second call with `graceMs: 0` ending the
// wait at once). The model holds its answer until the run is aborted: no sleeps.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentLoopError, ScriptedModel } from "../../src/index.js";
import { createAgentServer } from "../../src/server/index.js";
import { heldModel, postJson, startTestServer } from "./helpers.js";

describe("listen", () => {
  it("answers its URL (127.0.0.1 for 0.0.0.0), refuses a second call, and names an address it cannot take", async () => {
    const server = await createAgentServer({ env: { AGENT_NAME: "listener", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    try {
      assert.equal(server.url, undefined);
      const url = await server.listen(0, "0.0.0.0");
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(server.url, url);
      assert.equal((await fetch(`${url}/health`)).status, 200);
      await assert.rejects(server.listen(0, "127.0.0.1"), { message: "the server is already listening" });
    } finally {
      await server.close({ graceMs: 0 });
    }
    const unlistenable = await createAgentServer({ env: { AGENT_NAME: "nowhere", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    try {
      await assert.rejects(unlistenable.listen(0, "host.invalid"), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "network");
        assert.match(error.message, /^cannot listen on host\.invalid:0: /);
        return true;
      });
    } finally {
      await unlistenable.close({ graceMs: 0 });
    }
  });
});

describe("close", () => {
  it("waits for the requests going on, logging how many; called again with graceMs 0 it aborts them now", async () => {
    const held = heldModel();
    const test = await startTestServer({ AGENT_NAME: "closer" }, { build: { model: held.model } });
    const answer = postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], stream: true });
    await held.reached;
    const closing = test.server.close({ graceMs: 600_000 });
    await test.waitForLog(/shutting down/);
    assert.ok(test.logs.includes("[closer] shutting down: waiting up to 600000 ms for 1 request(s)"), test.logs.join("\n"));
    const again = test.server.close({ graceMs: 0 });
    await Promise.all([closing, again]);
    const text = await (await answer).text();
    assert.match(text, /"code":"aborted"/);
    assert.ok(test.logs.includes("[closer] shutdown grace period over: aborting 1 request(s)"), test.logs.join("\n"));
    assert.equal(test.logs.at(-1), "[closer] shut down");
  });
});

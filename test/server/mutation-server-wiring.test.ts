// src/server/server.ts's wiring as a client and an operator see it: an agent that cannot be built
// (two tools of one name) leaves the server up, /ready "failed" naming why and every chat a 503
// agent_unavailable; the cards' URL before the server listens (AGENT_PORT on localhost), once it
// listens, and a public URL's trailing slashes dropped; a chat arriving while the agent is still
// being built (its peer's card not answered yet) waits for it and is answered. The broken agent's cards
// still answer, and so does a chat declaring client tools (503 too); KAOS's card offers no delegation
// without sub-agents; listen() with no arguments takes AGENT_PORT and answers 127.0.0.1, on a named
// host answers that host, and its refusals carry node's error as their cause; close waits for a
// request finishing within its grace period, a second close with a non-zero grace changing nothing.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import type { Model } from "../../src/model/model.js";
import { createAgentServer } from "../../src/server/index.js";
import { echoTool, postJson, startTestServer } from "./helpers.js";

describe("an agent that cannot be built", () => {
  it("/ready is failed with the reason; a chat is 503 agent_unavailable on node:http and through fetch; the log says why", async () => {
    const test = await startTestServer({ AGENT_NAME: "broken" }, { build: { model: new ScriptedModel(["never"]), tools: [echoTool, echoTool] } });
    try {
      const ready = await test.server.ready();
      assert.equal(ready.status, "failed");
      assert.equal(ready.name, "broken");
      assert.match(ready.error!, /^agent "broken": .*echo/);
      const probe = await fetch(`${test.url}/ready`);
      assert.equal(probe.status, 503);
      assert.equal(((await probe.json()) as { status: string }).status, "failed");
      const chat = { messages: [{ role: "user", content: "hi" }] };
      for (const response of [
        await postJson(`${test.url}/v1/chat/completions`, chat),
        await test.server.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(chat) })),
      ]) {
        assert.equal(response.status, 503);
        const { error } = (await response.json()) as { error: { message: string; type: string; code: string } };
        assert.deepEqual([error.type, error.code], ["server_error", "agent_unavailable"]);
        assert.equal(error.message, `the agent is not available: ${ready.error}`);
      }
      // The cards still answer (the agent's name, no tools).
      for (const path of ["/.well-known/agent-card.json", "/.well-known/agent"]) {
        const card = await fetch(`${test.url}${path}`);
        assert.equal(card.status, 200, path);
        assert.equal(((await card.json()) as { name: string }).name, "broken", path);
      }
      // With client tools declared (their names checked against the agent's): the same 503.
      const withTools = await postJson(`${test.url}/v1/chat/completions`, { ...chat, tools: [{ type: "function", function: { name: "where", parameters: { type: "object" } } }] });
      assert.equal(withTools.status, 503);
      assert.equal(((await withTools.json()) as { error: { code: string } }).error.code, "agent_unavailable");
      assert.ok(test.logs.includes(`[broken] agent could not be built: ${ready.error}`), test.logs.join("\n"));
    } finally {
      await test.close();
    }
  });
});

describe("the URL the cards advertise", () => {
  const cardUrl = async (fetchCard: (path: string) => Promise<Response>) => {
    const card = (await (await fetchCard("/.well-known/agent.json")).json()) as { url: string };
    const kaos = (await (await fetchCard("/.well-known/agent")).json()) as { url: string };
    return [card.url, kaos.url];
  };

  it("is AGENT_PORT on localhost before listening, the listening address after, and a public URL without its trailing slashes", async () => {
    const server = await createAgentServer({ env: { AGENT_NAME: "where", AGENT_PORT: "8123", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    try {
      const viaFetch = (path: string) => server.fetch(new Request(`http://agent${path}`));
      assert.deepEqual(await cardUrl(viaFetch), ["http://localhost:8123/a2a", "http://localhost:8123"]);
      // No sub-agents: KAOS's card offers no delegation.
      assert.deepEqual(((await (await viaFetch("/.well-known/agent")).json()) as { capabilities: string[] }).capabilities, ["message_processing", "task_execution"]);
      const url = await server.listen(0, "127.0.0.1");
      assert.deepEqual(await cardUrl(viaFetch), [`${url}/a2a`, url]);
    } finally {
      await server.close({ graceMs: 0 });
    }
    const proxied = await createAgentServer({ env: { AGENT_NAME: "proxied", MEMORY_TYPE: "memory" }, publicUrl: "https://example.com/agents/proxied//", build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    try {
      assert.deepEqual(await cardUrl((path) => proxied.fetch(new Request(`http://agent${path}`))), ["https://example.com/agents/proxied/a2a", "https://example.com/agents/proxied"]);
    } finally {
      await proxied.close({ graceMs: 0 });
    }
  });
});

describe("a chat arriving while the agent is being built", () => {
  it("waits for the build (a peer's card answering) and is answered, not refused", async () => {
    let answerCard!: () => void;
    const cardGate = new Promise<void>((resolve) => (answerCard = resolve));
    let cardAsked!: () => void;
    const asked = new Promise<void>((resolve) => (cardAsked = resolve));
    const peer = createServer((_request, response) => {
      cardAsked();
      void cardGate.then(() => {
        response.setHeader("content-type", "application/json");
        response.end(JSON.stringify({ name: "slow", description: "a slow peer", url: "http://127.0.0.1:1", version: "1" }));
      });
    });
    await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
    const peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
    const test = await startTestServer({ AGENT_NAME: "building", AGENT_SUB_AGENTS: `slow:${peerUrl}` }, { readyTimeoutMs: 60_000, build: { model: new ScriptedModel(["built"]) } });
    try {
      await asked;
      const answer = postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }] });
      // Not answered while the build goes on (a refusal would come at once).
      const early = await Promise.race([answer.then(() => "answered"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 300))]);
      assert.equal(early, "waiting");
      answerCard();
      const response = await answer;
      assert.equal(response.status, 200);
      assert.equal(((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "built");
    } finally {
      answerCard();
      await test.close();
      peer.closeAllConnections();
      await new Promise((resolve) => peer.close(resolve));
    }
  });
});

describe("listen() with no arguments", () => {
  it("takes AGENT_PORT on every interface and answers 127.0.0.1 as its URL", async () => {
    // A port free a moment ago.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const server = await createAgentServer({ env: { AGENT_NAME: "defaults", AGENT_PORT: String(port), MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    try {
      const url = await server.listen();
      assert.equal(url, `http://127.0.0.1:${port}`);
      assert.equal((await fetch(`${url}/health`)).status, 200);
    } finally {
      await server.close({ graceMs: 0 });
    }
  });
});

describe("listen() on a named host, or where it cannot", () => {
  it("answers the host it was given; its refusals carry node's error as their cause", async () => {
    const server = await createAgentServer({ env: { AGENT_NAME: "named", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    const taken = await createAgentServer({ env: { AGENT_NAME: "taken", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    const nowhere = await createAgentServer({ env: { AGENT_NAME: "nowhere", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    try {
      const url = await server.listen(0, "localhost");
      assert.match(url, /^http:\/\/localhost:\d+$/);
      const port = Number(new URL(url).port);
      await assert.rejects(taken.listen(port, "localhost"), (error: Error & { kind?: string; cause?: { code?: string } }) => {
        assert.equal(error.kind, "configuration");
        assert.equal(error.message, `AGENT_PORT: port ${port} is already in use`);
        assert.equal(error.cause?.code, "EADDRINUSE");
        return true;
      });
      await assert.rejects(nowhere.listen(0, "host.invalid"), (error: Error & { cause?: { code?: string } }) => {
        assert.match(String(error.cause?.code), /^(ENOTFOUND|EAI_AGAIN)$/);
        return true;
      });
    } finally {
      await Promise.all([server.close({ graceMs: 0 }), taken.close({ graceMs: 0 }), nowhere.close({ graceMs: 0 })]);
    }
  });
});

describe("close while a request finishes within the grace period", () => {
  it("waits for it, aborts nothing, and a second close with a shorter, non-zero grace changes nothing", async () => {
    let reach!: () => void;
    const reached = new Promise<void>((resolve) => (reach = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const model: Model = {
      provider: "test",
      modelId: "gated",
      async *stream() {
        reach();
        await finished;
        yield { type: "text-start", id: "t" };
        yield { type: "text-delta", id: "t", delta: "finished in time" };
        yield { type: "text-end", id: "t" };
        yield { type: "finish", reason: { unified: "stop", raw: "stop" } };
      },
    };
    const test = await startTestServer({ AGENT_NAME: "graceful" }, { build: { model } });
    const answer = postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }] });
    await reached;
    const closing = test.server.close({ graceMs: 600_000 });
    await test.waitForLog(/shutting down/);
    const again = test.server.close({ graceMs: 5_000 });
    await new Promise((resolve) => setImmediate(resolve));
    finish();
    const response = await answer;
    assert.equal(response.status, 200);
    assert.equal(((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "finished in time");
    await Promise.all([closing, again]);
    const shutdown = test.logs.filter((line) => !/ run \S+ session /.test(line));
    assert.deepEqual(shutdown, ["[graceful] shutting down: waiting up to 600000 ms for 1 request(s)", "[graceful] shut down"]);
  });
});

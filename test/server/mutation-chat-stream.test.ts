// src/server/chat-stream.ts as a client sees it: a body starting with a UTF-8 byte order mark is read
// as JSON on the hot path as through `fetch` (Request.text() drops the mark too), and a stream read
// through `AgentServer.fetch` whose reader is cancelled aborts its run as a client leaving does; the
// step limit's message for a limit of two digits; a turn calling a client's tool and a tool needing
// approval reports approval_required (both pending), a turn calling only client tools their calls.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import { echoTool, heldModel, postJson, startTestServer, type TestServer, writeFileTool } from "./helpers.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });
type Completion = {
  choices: Array<{ message: { content: string | null; tool_calls?: unknown[] }; finish_reason: string }>;
  approval_required?: { session_id: string; pending: Array<{ tool_call_id: string; tool: string }> };
};

describe("a request body with a byte order mark", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "bom" }, { bodyLimitBytes: 1024, build: { model: new ScriptedModel(["streamed", "streamed again", "marked", "marked again"], { continueAcrossRuns: true }) } });
  });
  after(() => test.close());

  it("a stream's headers, on node:http and through fetch: an event stream, not cached, naming the session", async () => {
    const init = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "headed", stream: true, messages: [{ role: "user", content: "hi" }] }) };
    for (const response of [await fetch(`${test.url}/v1/chat/completions`, init), await test.server.fetch(new Request("http://agent/v1/chat/completions", init))]) {
      assert.equal(response.status, 200);
      assert.deepEqual(
        ["content-type", "cache-control", "x-session-id"].map((name) => response.headers.get(name)),
        ["text/event-stream; charset=utf-8", "no-cache", "headed"],
      );
      assert.match(await response.text(), /data: \[DONE\]\n\n$/);
    }
  });

  it("over the body limit, on node:http: 413 request_too_large naming the limit", async () => {
    const response = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "x".repeat(2000) }] });
    assert.equal(response.status, 413);
    assert.deepEqual(await response.json(), { error: { message: "the request body is larger than 1024 bytes", type: "invalid_request_error", param: null, code: "request_too_large" } });
  });

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
      assert.match(line, /^\[reader\] run \S+ session cancelled ABORTED: aborted: client disconnected \(client disconnected\)$/);
    } finally {
      await test.close();
    }
  });
});

describe("the step limit reached", () => {
  it("answers KAOS's message with the limit, however many digits it has", async () => {
    const model = new ScriptedModel(Array.from({ length: 12 }, (_, index) => calls([`call_${index}`, "echo", { text: String(index) }])));
    const test = await startTestServer({ AGENT_NAME: "steps", AGENTIC_LOOP_MAX_STEPS: "12" }, { build: { model, tools: [echoTool] } });
    try {
      const answer = (await (await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "go" }] })).json()) as Completion;
      assert.deepEqual([answer.choices[0]!.message.content, answer.choices[0]!.finish_reason], ["Reached maximum reasoning steps (12)", "length"]);
    } finally {
      await test.close();
    }
  });
});

describe("a turn calling the client's tools", () => {
  const tools = [{ type: "function", function: { name: "where", description: "The user's location", parameters: { type: "object" } } }];
  it("with a call needing approval beside: approval_required naming both; the client's calls alone: tool_calls, as OpenAI shapes them", async () => {
    const written: string[] = [];
    const model = new ScriptedModel([calls(["call_w", "where", {}], ["call_f", "write_file", { path: "f.txt" }]), calls(["call_x", "where", { precise: true }], ["call_y", "where", {}])], { continueAcrossRuns: true });
    const test = await startTestServer({ AGENT_NAME: "mixed", MEMORY_ENABLED: "false" }, { build: { model, tools: [writeFileTool(written)] } });
    try {
      const chat = async (sessionId: string) => (await (await postJson(`${test.url}/v1/chat/completions`, { session_id: sessionId, messages: [{ role: "user", content: "go" }], tools })).json()) as Completion;
      const both = await chat("both");
      assert.equal(both.choices[0]!.finish_reason, "approval_required");
      assert.equal(both.choices[0]!.message.tool_calls, undefined);
      assert.deepEqual(
        both.approval_required!.pending.map((entry) => [entry.tool_call_id, entry.tool]),
        [
          ["call_w", "where"],
          ["call_f", "write_file"],
        ],
      );
      const client = await chat("client");
      assert.equal(client.choices[0]!.finish_reason, "tool_calls");
      assert.equal(client.approval_required, undefined);
      assert.deepEqual(client.choices[0]!.message.tool_calls, [
        { id: "call_x", type: "function", function: { name: "where", arguments: '{"precise":true}' } },
        { id: "call_y", type: "function", function: { name: "where", arguments: "{}" } },
      ]);
    } finally {
      await test.close();
    }
  });
});

// src/server/chat-stream.ts on the wire, beyond test/server/mutation-chat-stream.test.ts: a stream's
// `Connection: keep-alive` on both doors, and a sub-agent's call waiting for approval reported as
// approval_required even when the client declared a tool of the same name (only this agent's own
// calls of a client tool go back to the client as tool_calls); a request whose client left while it
// waited behind another run of its session is logged as the client's leaving when the shutdown comes.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { delegateTool } from "../../src/agents/index.js";
import { ScriptedModel } from "../../src/index.js";
import { Agent } from "../../src/loop/agent.js";
import { echoTool, heldModel, postJson, startTestServer, type TestServer } from "./helpers.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });

describe("a chat whose sub-agent waits for approval of a tool named like a client's tool", () => {
  let test: TestServer;
  before(async () => {
    const where = { ...echoTool, name: "where" };
    const researcher = new Agent({ name: "researcher", model: new ScriptedModel([calls(["sub_w", "where", { text: "here" }])], { continueAcrossRuns: true }), tools: [where], needsApproval: ["where"], onApproval: "interrupt" });
    const model = new ScriptedModel([calls(["call_r", "researcher", { task: "find it" }]), "streamed"], { continueAcrossRuns: true });
    test = await startTestServer({ AGENT_NAME: "parent", MEMORY_ENABLED: "false" }, { build: { model, tools: [delegateTool(researcher, { name: "researcher" })] } });
  });
  after(() => test.close());

  it("reports approval_required naming the sub-agent's call, not tool_calls for the client", async () => {
    const response = await postJson(`${test.url}/v1/chat/completions`, {
      messages: [{ role: "user", content: "find it" }],
      tools: [{ type: "function", function: { name: "where", parameters: { type: "object" } } }],
    });
    assert.equal(response.status, 200);
    const body = (await response.json()) as {
      choices: Array<{ message: { tool_calls?: unknown }; finish_reason: string }>;
      approval_required?: { pending: Array<{ tool_call_id: string; tool: string; agent_path: string[] }> };
    };
    assert.equal(body.choices[0]!.finish_reason, "approval_required");
    assert.equal(body.choices[0]!.message.tool_calls, undefined);
    assert.deepEqual(
      body.approval_required?.pending.map((entry) => [entry.tool_call_id, entry.tool, entry.agent_path]),
      [["sub_w", "where", ["parent", "researcher"]]],
    );
  });

  it("a stream's headers keep the connection alive, on node:http and through fetch", async () => {
    const init = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "hi" }] }) };
    for (const response of [await fetch(`${test.url}/v1/chat/completions`, init), await test.server.fetch(new Request("http://agent/v1/chat/completions", init))]) {
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("connection"), "keep-alive");
      await response.text();
    }
  });
});

describe("a request whose client left while it waited behind another run of its session, then the shutdown", () => {
  it("is logged as the client's leaving, not as the shutdown", async () => {
    const held = heldModel();
    const test = await startTestServer({ AGENT_NAME: "queued" }, { build: { model: held.model } });
    const chat = (content: string) =>
      new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "one", stream: true, messages: [{ role: "user", content }] }) });
    const first = await test.server.fetch(chat("first"));
    await held.reached;
    // The second waits for the first (same session); its reader gives up.
    const second = await test.server.fetch(chat("second"));
    await second.body!.cancel();
    await test.server.close({ graceMs: 0 });
    await first.text();
    const runs = test.logs.filter((line) => / run \S+ session one /.test(line)).map((line) => line.replace(/ run \S+ /, " run <id> "));
    assert.deepEqual(runs, ["[queued] run <id> session one ABORTED: aborted: server shutting down", "[queued] run <id> session one ABORTED: aborted: client disconnected (client disconnected)"]);
  });
});

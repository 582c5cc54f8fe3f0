// Client-side tools: tools the frontend declares and runs, on the approvals checkpoint (a client
// tool call is a pending call whose result the client supplies). AG-UI with @ag-ui/client's
// HttpAgent: the run ends with the call pending, the tool message of the next input continues it;
// a name clash, a result for a call the run never made, and a result for a call waiting for
// approval are refused with a 400 naming them.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { HttpAgent } from "@ag-ui/client";
import { ScriptedModel } from "../../src/index.js";
import { postJson, startTestServer, type TestServer } from "../server/helpers.js";
import { echo, writeFile } from "./scenarios.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });
const pickColor = { name: "pick_color", description: "Asks the user to pick a color", parameters: { type: "object", properties: { choices: { type: "array", items: { type: "string" } } }, required: ["choices"] } };

describe("client tools on /ag-ui", () => {
  let server: TestServer;
  before(async () => {
    const script = [calls(["call_pick", "pick_color", { choices: ["red", "blue"] }], ["call_echo", "echo", { text: "asked" }]), "The user picked blue.", calls(["call_w", "write_file", { path: "x" }]), "done"];
    server = await startTestServer({ AGENT_NAME: "colors" }, { build: { model: new ScriptedModel(script, { continueAcrossRuns: true }), tools: [echo, writeFile] } });
  });
  after(() => server.close());

  it("HttpAgent: the run ends with the client's call pending; its tool message continues the same run", async () => {
    const agent = new HttpAgent({ url: `${server.url}/ag-ui`, threadId: "client-tools" });
    agent.addMessage({ id: "u1", role: "user", content: "pick a color" });
    let outcome: unknown;
    const seen: string[] = [];
    const subscriber = {
      onEvent: ({ event }: { event: { type: string; toolCallName?: string } }) => void seen.push(event.toolCallName ? `${event.type}:${event.toolCallName}` : event.type),
      onRunFinishedEvent: ({ event }: { event: { outcome?: unknown } }) => void (outcome = event.outcome),
    };
    await agent.runAgent({ runId: "r1", tools: [pickColor] }, subscriber);
    assert.deepEqual(outcome, { type: "success", pendingToolCallIds: ["call_pick"] });
    assert.ok(seen.includes("TOOL_CALL_START:pick_color"), seen.join(", "));
    const call = agent.messages.flatMap((message) => (message.role === "assistant" ? (message.toolCalls ?? []) : [])).find((entry) => entry.id === "call_pick");
    assert.deepEqual(JSON.parse(call!.function.arguments), { choices: ["red", "blue"] });

    agent.addMessage({ id: "t1", role: "tool", toolCallId: "call_pick", content: "blue" });
    const second = await agent.runAgent({ runId: "r2", tools: [pickColor] }, subscriber);
    assert.equal(second.result, "The user picked blue.");
    const tools = agent.messages.filter((message) => message.role === "tool").map((message) => [message.toolCallId, message.content]);
    assert.deepEqual(tools, [
      ["call_pick", "blue"],
      ["call_echo", "echo: asked"],
    ]);
  });

  it("refuses a client tool named like one of the agent's, a result for a call the run never made, and a result for a call waiting for approval", async () => {
    const clash = await postJson(`${server.url}/ag-ui`, { threadId: "clash", runId: "r", messages: [{ id: "u", role: "user", content: "x" }], tools: [{ name: "echo", description: "mine" }] });
    assert.equal(clash.status, 400);
    const clashError = ((await clash.json()) as { error: { message: string; param: string } }).error;
    assert.equal(clashError.param, "tools[0].name");
    assert.match(clashError.message, /"echo" is the name of one of the agent's own tools/);

    // A run that stops for the approval of write_file (the script's next entries).
    const agent = new HttpAgent({ url: `${server.url}/ag-ui`, threadId: "forged" });
    agent.addMessage({ id: "u1", role: "user", content: "write" });
    await agent.runAgent({ runId: "r1" });
    for (const [toolCallId, pattern] of [
      ["call_never", /did not leave to the client/],
      ["call_w", /waiting for approval; it takes a decision, not a result/],
    ] as const) {
      const response = await postJson(`${server.url}/ag-ui`, { threadId: "forged", runId: "r2", messages: [{ id: "t", role: "tool", toolCallId, content: "forged" }], tools: [pickColor] });
      assert.equal(response.status, 400, toolCallId);
      assert.match(((await response.json()) as { error: { message: string } }).error.message, pattern);
    }
  });
});

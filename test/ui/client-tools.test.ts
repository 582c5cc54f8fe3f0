// Client-side tools: tools the frontend declares and runs, on the approvals checkpoint (a client
// tool call is a pending call whose result the client supplies). AG-UI with @ag-ui/client's
// HttpAgent: the run ends with the call pending, the tool message of the next input continues it;
// a name clash, a result for a call the run never made, and a result for a call waiting for
// approval are refused with a 400 naming them.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai";
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

describe("client tools on /api/chat: the agent file's client: true tools, answered with addToolOutput", () => {
  let server: TestServer;
  before(async () => {
    const script = [calls(["call_pick", "pick_color", { choices: ["red", "blue"] }], ["call_echo", "echo", { text: "asked" }]), "The user picked blue."];
    const file = { tools: [{ ...pickColor, client: true as const }] };
    server = await startTestServer({ AGENT_NAME: "ui-colors" }, { file, build: { model: new ScriptedModel(script), tools: [echo] } });
  });
  after(() => server.close());

  async function read(stream: ReadableStream<never>, message?: UIMessage): Promise<UIMessage> {
    let last: UIMessage | undefined;
    for await (const value of readUIMessageStream({ stream, message })) last = value;
    return structuredClone(last ?? message)!;
  }

  it("the call waits as input-available (no approval asked); its output continues the same run and message", async () => {
    const transport = new DefaultChatTransport<UIMessage>({ api: `${server.url}/api/chat` });
    const user: UIMessage = { id: "u1", role: "user", parts: [{ type: "text", text: "pick" }] };
    const first = await read((await transport.sendMessages({ chatId: "ui-client", messages: [user], trigger: "submit-message", messageId: undefined, abortSignal: undefined })) as ReadableStream<never>);
    const parts = first.parts.filter((part) => part.type.startsWith("tool-")) as unknown as Array<{ type: string; toolCallId: string; state: string; input: unknown }>;
    assert.deepEqual(
      parts.map((part) => [part.type, part.state]),
      [
        ["tool-pick_color", "input-available"],
        ["tool-echo", "input-available"],
      ],
    );
    // What addToolOutput({ tool: "pick_color", toolCallId, output }) does to the part.
    const answered: UIMessage = { ...first, parts: first.parts.map((part) => ((part as { toolCallId?: string }).toolCallId === "call_pick" ? ({ ...part, state: "output-available", output: "blue" } as UIMessage["parts"][number]) : part)) };
    const second = await read((await transport.sendMessages({ chatId: "ui-client", messages: [user, answered], trigger: "submit-message", messageId: answered.id, abortSignal: undefined })) as ReadableStream<never>, answered);
    const done = second.parts.filter((part) => part.type.startsWith("tool-")) as unknown as Array<{ toolCallId: string; state: string; output: unknown }>;
    assert.deepEqual(
      done.map((part) => [part.toolCallId, part.state, part.output]),
      [
        ["call_pick", "output-available", "blue"],
        ["call_echo", "output-available", "echo: asked"],
      ],
    );
    assert.ok(second.parts.some((part) => part.type === "text" && part.text === "The user picked blue."));
  });
});

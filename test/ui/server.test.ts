// The UI protocol routes of `agentloop serve` on loopback, driven by the protocols' own clients:
// the `ai` package's DefaultChatTransport (what useChat sends and reads, each chunk parsed with its
// schema) on POST /api/chat and GET /api/chat/{id}/stream, and @ag-ui/client's HttpAgent (which
// verifies the event order) on POST /ag-ui. Approvals resume the stopped run through the same path
// as POST /v1/approvals, and the session's memory shows it.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { ScriptedModel } from "../../src/index.js";
import { agentTool } from "../../src/agents/index.js";
import { Agent } from "../../src/loop/agent.js";
import { postJson, startTestServer, type TestServer } from "../server/helpers.js";
import { echo, fails, writeFile } from "./scenarios.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });

/** Reads a transport's chunk stream into the message useChat would show (continuing `message`). */
async function messageOf(stream: ReadableStream<UIMessageChunk>, message?: UIMessage): Promise<{ message: UIMessage; chunks: UIMessageChunk[] }> {
  const chunks: UIMessageChunk[] = [];
  const [forMessage, forChunks] = stream.tee();
  const collecting = (async () => {
    for await (const chunk of forChunks) chunks.push(chunk);
  })();
  let last: UIMessage | undefined;
  for await (const value of readUIMessageStream({ stream: forMessage, message, onError: () => undefined })) last = value;
  await collecting;
  return { message: structuredClone(last ?? message)!, chunks };
}

const userMessage = (id: string, text: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] });
type ToolPart = { type: string; toolCallId: string; state: string; output?: unknown; errorText?: string; approval?: { id: string; approved?: boolean; reason?: string } };
const toolParts = (message: UIMessage) => message.parts.filter((part) => part.type.startsWith("tool-")) as unknown as ToolPart[];
const textOf = (message: UIMessage) =>
  message.parts
    .filter((part) => part.type === "text")
    .map((part) => (part as { text: string }).text)
    .join("");

async function storedTypes(server: TestServer, sessionId: string): Promise<string[]> {
  const response = await fetch(`${server.url}/memory/events?session_id=${sessionId}&limit=1000`);
  return ((await response.json()) as { events: Array<{ event_type: string }> }).events.map((event) => event.event_type);
}

describe("POST /api/chat (the AI SDK UI message stream) with the ai package's DefaultChatTransport", () => {
  let server: TestServer;
  let transport: DefaultChatTransport<UIMessage>;
  before(async () => {
    const model = new ScriptedModel([calls(["call_a", "echo", { text: "hi" }], ["call_b", "fails", { why: "disk full" }]), "Echo said hi; the other failed."]);
    server = await startTestServer({ AGENT_NAME: "helper" }, { build: { model, tools: [echo, fails] } });
    transport = new DefaultChatTransport({ api: `${server.url}/api/chat` });
  });
  after(() => server.close());

  it("answers with the v1 header, the wave's two calls with their outputs, then the streamed answer", async () => {
    const raw = await postJson(`${server.url}/api/chat`, { id: "ui-wave-raw", messages: [userMessage("u1", "go")], trigger: "submit-message" });
    assert.equal(raw.headers.get("x-vercel-ai-ui-message-stream"), "v1");
    assert.match(raw.headers.get("content-type") ?? "", /text\/event-stream/);
    assert.match(await raw.text(), /data: \[DONE\]\n\n$/);

    const stream = await transport.sendMessages({ chatId: "ui-wave", messages: [userMessage("u1", "echo hi")], trigger: "submit-message", messageId: undefined, abortSignal: undefined });
    const { message, chunks } = await messageOf(stream);
    assert.deepEqual(
      toolParts(message).map((part) => [part.type, part.toolCallId, part.state]),
      [
        ["tool-echo", "call_a", "output-available"],
        ["tool-fails", "call_b", "output-error"],
      ],
    );
    assert.equal(toolParts(message)[0].output, "echo: hi");
    assert.equal(textOf(message), "Echo said hi; the other failed.");
    assert.deepEqual(chunks.at(-1), { type: "finish", finishReason: "stop" });
    // The session's memory has what chat completions would have stored.
    const types = await storedTypes(server, "ui-wave");
    for (const type of ["user_message", "tool_call", "tool_result", "agent_response", "run_ended"]) assert.ok(types.includes(type), `${type} in ${types.join(", ")}`);
  });

  it("GET /api/chat/{id}/stream answers 204 when the chat has no running stream (the transport reads null)", async () => {
    const response = await fetch(`${server.url}/api/chat/nothing-running/stream`);
    assert.equal(response.status, 204);
    assert.equal(await transport.reconnectToStream({ chatId: "nothing-running" }), null);
  });

  it("refuses bad requests with a 400 naming the problem", async () => {
    const cases: Array<[unknown, RegExp, string | null]> = [
      [{ id: "../etc", messages: [userMessage("u", "x")] }, /id must be/, "id"],
      [{ id: "c1", messages: [] }, /messages must not be empty/, "messages"],
      [{ id: "c1", messages: "hi" }, /messages must be an array/, "messages"],
      [{ id: "c1", messages: [{ id: "m", role: "robot", parts: [] }] }, /role must be/, "messages[0].role"],
      [{ id: "c1", messages: [userMessage("u", "x")], trigger: "regenerate-message" }, /regenerate-message/, "trigger"],
      [{ id: "c1", messages: [{ id: "a", role: "assistant", parts: [{ type: "text", text: "hi" }] }] }, /no approval response/, "messages[0]"],
      [[1, 2], /JSON object/, null],
    ];
    for (const [body, message, param] of cases) {
      const response = await postJson(`${server.url}/api/chat`, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      const error = ((await response.json()) as { error: { message: string; param: string | null } }).error;
      assert.match(error.message, message);
      assert.equal(error.param, param);
    }
  });
});

describe("approvals on /api/chat: tool-approval-request, then addToolApprovalResponse's message resumes the run", () => {
  let server: TestServer;
  before(async () => {
    const model = new ScriptedModel([calls(["call_a", "write_file", { path: "a.txt" }], ["call_b", "write_file", { path: "b.txt" }]), "Wrote a.txt."]);
    server = await startTestServer({ AGENT_NAME: "writer" }, { build: { model, tools: [writeFile] } });
  });
  after(() => server.close());

  it("approve one, reject the other: the same message gets the output and output-denied; a second answer is refused (409)", async () => {
    const transport = new DefaultChatTransport<UIMessage>({ api: `${server.url}/api/chat` });
    const user = userMessage("u1", "write a and b");
    const first = await messageOf(await transport.sendMessages({ chatId: "ui-approve", messages: [user], trigger: "submit-message", messageId: undefined, abortSignal: undefined }));
    assert.deepEqual(
      toolParts(first.message).map((part) => [part.toolCallId, part.state]),
      [
        ["call_a", "approval-requested"],
        ["call_b", "approval-requested"],
      ],
    );
    // What addToolApprovalResponse does to the parts, then what the next request sends.
    const answered: UIMessage = {
      ...first.message,
      parts: first.message.parts.map((part) => {
        const tool = part as unknown as ToolPart;
        if (tool.state !== "approval-requested") return part;
        const approved = tool.toolCallId === "call_a";
        return { ...part, state: "approval-responded", approval: { id: tool.approval!.id, approved, ...(approved ? {} : { reason: "not b" }) } } as UIMessage["parts"][number];
      }),
    };
    const second = await messageOf(await transport.sendMessages({ chatId: "ui-approve", messages: [user, answered], trigger: "submit-message", messageId: answered.id, abortSignal: undefined }), answered);
    assert.equal(second.message.id, first.message.id);
    assert.deepEqual(
      toolParts(second.message).map((part) => [part.toolCallId, part.state, part.output]),
      [
        ["call_a", "output-available", "wrote a.txt"],
        ["call_b", "output-denied", undefined],
      ],
    );
    assert.equal(textOf(second.message), "Wrote a.txt.");
    const types = await storedTypes(server, "ui-approve");
    assert.ok(types.includes("approval_requested") && types.includes("approval_decided"), types.join(", "));
    const again = await postJson(`${server.url}/api/chat`, { id: "ui-approve", messages: [user, answered], trigger: "submit-message" });
    assert.equal(again.status, 409);
  });
});

describe("resumable streams: a client that leaves mid-answer reads the whole stream again from GET /api/chat/{id}/stream", () => {
  let server: TestServer;
  const words = Array.from({ length: 40 }, (_, index) => `w${index}`).join(" ");
  before(async () => {
    const model = new ScriptedModel([words], { chunkDelayMs: 10 });
    server = await startTestServer({ AGENT_NAME: "slow" }, { build: { model, tools: [] } });
  });
  after(() => server.close());

  it("the run goes on without its client; the resumed stream replays from the start and follows to finish", async () => {
    const transport = new DefaultChatTransport<UIMessage>({ api: `${server.url}/api/chat` });
    const leaving = new AbortController();
    const stream = await transport.sendMessages({ chatId: "ui-resume", messages: [userMessage("u1", "count")], trigger: "submit-message", messageId: undefined, abortSignal: leaving.signal });
    const reader = stream.getReader();
    for (;;) {
      const { value } = await reader.read();
      if (value?.type === "text-delta") break;
    }
    leaving.abort();
    await reader.cancel().catch(() => undefined);
    const resumed = await transport.reconnectToStream({ chatId: "ui-resume" });
    assert.ok(resumed, "a stream is running");
    const { message, chunks } = await messageOf(resumed);
    assert.equal(chunks[0].type, "start");
    // Every chunk once, in order (the stream is recorded one string per tick; a reader joins mid-tick too).
    assert.equal(textOf(message), words);
    assert.deepEqual(
      chunks.filter((chunk) => chunk.type !== "text-delta").map((chunk) => chunk.type),
      ["start", "start-step", "text-start", "data-usage", "text-end", "finish-step", "finish"],
    );
    assert.deepEqual(chunks.at(-1), { type: "finish", finishReason: "stop" });
  });
});

describe("POST /ag-ui with @ag-ui/client's HttpAgent (events verified)", () => {
  let server: TestServer;
  before(async () => {
    const researcher = new Agent({ name: "researcher", description: "Finds things", model: new ScriptedModel([calls(["sub_1", "echo", { text: "deep" }]), "Found: deep."]), tools: [echo] });
    const script = [
      calls(["call_a", "echo", { text: "hi" }], ["call_b", "echo", { text: "there" }]),
      "Both echoed.",
      calls(["call_w", "write_file", { path: "a.txt" }]),
      "Wrote a.txt.",
      calls(["call_r", "researcher", { task: "find deep" }]),
      "The researcher found deep.",
    ];
    const model = new ScriptedModel(script, { continueAcrossRuns: true });
    server = await startTestServer({ AGENT_NAME: "agui" }, { build: { model, tools: [echo, writeFile, agentTool(researcher, { name: "researcher" })] } });
  });
  after(() => server.close());

  it("a wave, an approval interrupt answered by resume, and a sub-agent, on one thread", async () => {
    const agent = new HttpAgent({ url: `${server.url}/ag-ui`, threadId: "agui-thread" });
    const seen: string[] = [];
    const subscriber = { onEvent: ({ event }: { event: { type: string } }) => void seen.push(event.type) };

    agent.addMessage({ id: "u1", role: "user", content: "echo twice" });
    const first = await agent.runAgent({ runId: "run-1" }, subscriber);
    assert.equal(first.result, "Both echoed.");
    assert.deepEqual(
      seen.filter((type) => type.startsWith("TOOL_CALL") || type.startsWith("STEP")),
      ["STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TOOL_CALL_RESULT", "STEP_FINISHED"],
    );
    const tools = agent.messages.filter((message) => message.role === "tool").map((message) => message.content);
    assert.deepEqual(tools, ["echo: hi", "echo: there"]);

    seen.length = 0;
    let outcome: unknown;
    const finishing = { ...subscriber, onRunFinishedEvent: ({ event }: { event: { outcome?: unknown } }) => void (outcome = event.outcome) };
    agent.addMessage({ id: "u2", role: "user", content: "write a.txt" });
    await agent.runAgent({ runId: "run-2" }, finishing);
    const interrupt = outcome as { type: string; interrupts: Array<{ id: string; toolCallId: string }> };
    assert.equal(interrupt.type, "interrupt");
    assert.deepEqual(
      interrupt.interrupts.map((entry) => entry.toolCallId),
      ["call_w"],
    );
    await agent.runAgent({ runId: "run-3", resume: [{ interruptId: "call_w", status: "resolved", payload: { approve: true } }] }, finishing);
    assert.deepEqual(outcome, { type: "success" });
    assert.ok(agent.messages.some((message) => message.role === "tool" && message.content === "wrote a.txt"));
    assert.ok(agent.messages.some((message) => message.role === "assistant" && message.content === "Wrote a.txt."));

    seen.length = 0;
    agent.addMessage({ id: "u3", role: "user", content: "research" });
    const third = await agent.runAgent({ runId: "run-4" }, subscriber);
    assert.equal(third.result, "The researcher found deep.");
    assert.ok(seen.indexOf("SUBAGENT_STARTED") >= 0 && seen.indexOf("SUBAGENT_FINISHED") > seen.indexOf("SUBAGENT_STARTED"), seen.join(", "));
    // MESSAGES_SNAPSHOT kept the client's messages (its ids) and added each message once.
    assert.deepEqual(
      agent.messages.filter((message) => message.role === "user").map((message) => message.id),
      ["u1", "u2", "u3"],
    );
    const results = agent.messages.filter((message) => message.role === "tool").map((message) => message.toolCallId);
    assert.deepEqual(results, [...new Set(results)]);
    const callIds = agent.messages.flatMap((message) => (message.role === "assistant" ? (message.toolCalls ?? []).map((call) => call.id) : []));
    assert.deepEqual(callIds, [...new Set(callIds)]);
    const types = await storedTypes(server, "agui-thread");
    assert.ok(types.includes("approval_decided"), types.join(", "));
  });

  it("refuses bad input with a 400 naming the field; a resume with nothing pending is a 404", async () => {
    const cases: Array<[unknown, RegExp, string | null]> = [
      [{ threadId: "bad id!", runId: "r", messages: [] }, /threadId must be/, "threadId"],
      [{ threadId: "t1", messages: [] }, /runId must be a string/, "runId"],
      [{ threadId: "t1", runId: "r", messages: [{ id: "m", role: "assistant", content: "hi" }] }, /last message must be the user's/, "messages[0].role"],
      [{ threadId: "t1", runId: "r", messages: [], resume: [{ interruptId: "x", status: "resolved", payload: { approve: "yes" } }] }, /payload must be/, "resume[0].payload"],
      [{ threadId: "t1", runId: "r", messages: [], tools: [{ description: "no name" }] }, /tools\[0\]\.name must be a string/, "tools[0].name"],
    ];
    for (const [body, message, param] of cases) {
      const response = await postJson(`${server.url}/ag-ui`, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      const error = ((await response.json()) as { error: { message: string; param: string | null } }).error;
      assert.match(error.message, message);
      assert.equal(error.param, param);
    }
    const nothing = await postJson(`${server.url}/ag-ui`, { threadId: "t-none", runId: "r", messages: [], resume: [{ interruptId: "call_x", status: "resolved", payload: { approve: true } }] });
    assert.equal(nothing.status, 404);
  });
});

describe("the UI routes share the server's guards", () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ AGENT_NAME: "guarded", AGENT_API_KEY: "secret", DEBUG_MOCK_RESPONSES: JSON.stringify(["hello"]) }, { bodyLimitBytes: 2048 });
  });
  after(() => server.close());

  it("bearer auth (401) and the body limit (413) on POST /api/chat, GET /api/chat/{id}/stream and POST /ag-ui", async () => {
    const chat = { id: "g1", messages: [userMessage("u", "hi")] };
    const agUi = { threadId: "g1", runId: "r", messages: [{ id: "u", role: "user", content: "hi" }] };
    assert.equal((await postJson(`${server.url}/api/chat`, chat)).status, 401);
    assert.equal((await fetch(`${server.url}/api/chat/g1/stream`)).status, 401);
    assert.equal((await postJson(`${server.url}/ag-ui`, agUi)).status, 401);
    const auth = { authorization: "Bearer secret" };
    const answered = await postJson(`${server.url}/api/chat`, chat, auth);
    assert.equal(answered.status, 200);
    assert.match(await answered.text(), /hello/);
    // The chat's stream ended: nothing to resume.
    assert.equal((await fetch(`${server.url}/api/chat/g1/stream`, { headers: auth })).status, 204);
    const big = "x".repeat(4096);
    assert.equal((await postJson(`${server.url}/api/chat`, { ...chat, messages: [userMessage("u", big)] }, auth)).status, 413);
    assert.equal((await postJson(`${server.url}/ag-ui`, { ...agUi, messages: [{ id: "u", role: "user", content: big }] }, auth)).status, 413);
  });
});

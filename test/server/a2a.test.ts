import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { A2A_VERSION_HEADER, type Message, Role, type Task, TaskState } from "@a2a-js/sdk";
import { type Client, ClientFactory } from "@a2a-js/sdk/client";
import { a2aAgentTool } from "../../src/a2a/index.js";
import { Agent, ScriptedModel } from "../../src/index.js";
import { A2A_VERSION_HEADER as OUR_VERSION_HEADER } from "../../src/server/agent-card.js";
import { script, startTestServer, type TestServer, toolCall } from "./helpers.js";

const userMessage = (text: string, contextId = randomUUID()): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId: "",
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const request = (message: Message, returnImmediately = false) => ({
  tenant: "",
  message,
  configuration: { acceptedOutputModes: ["text/plain"], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: undefined,
});

const artifactText = (task: Task) =>
  task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === "text" ? part.content.value : ""))
    .join("");

describe("the A2A endpoint, driven by the A2A SDK client", () => {
  let test: TestServer;
  let client: Client;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "a2a-agent", AGENT_DESCRIPTION: "Answers over A2A", DEBUG_MOCK_RESPONSES: script(toolCall("echo", { text: "hi" }), "A2A answer") });
    client = await new ClientFactory().createFromUrl(test.url);
  });
  after(() => test.close());

  it("serves the agent card with tools as skills and streaming on", async () => {
    const card = (await (await fetch(`${test.url}/.well-known/agent.json`)).json()) as Record<string, any>;
    assert.equal(card.name, "a2a-agent");
    assert.equal(card.description, "Answers over A2A");
    assert.equal(card.url, `${test.url}/a2a`);
    assert.equal(typeof card.version, "string");
    assert.equal(typeof card.protocolVersion, "string");
    assert.equal(card.capabilities.streaming, true);
    assert.deepEqual(
      card.skills.map((skill: { id: string }) => skill.id),
      ["echo"],
    );
  });

  it("sends a message and gets a completed task whose context is the session", async () => {
    const message = userMessage("hello over a2a");
    const result = (await client.sendMessage(request(message))) as Task;
    assert.equal(result.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(artifactText(result), "A2A answer");
    const events = (await (await fetch(`${test.url}/memory/events?session_id=${message.contextId}`)).json()) as { events: Array<{ event_type: string }> };
    assert.deepEqual(
      events.events.map((event) => event.event_type).filter((type) => !type.startsWith("run_")),
      ["user_message", "tool_call", "tool_result", "agent_response"],
    );
    const fetched = await client.getTask({ tenant: "", id: result.id, historyLength: undefined });
    assert.equal(fetched.status?.state, TaskState.TASK_STATE_COMPLETED);
  });

  it("streams a task: working, the progress block, the answer in chunks, then completed", async () => {
    const seen: string[] = [];
    let answer = "";
    let progress: unknown;
    let chunks = 0;
    for await (const event of client.sendMessageStream(request(userMessage("stream it")))) {
      const payload = event.payload;
      if (!payload) continue;
      if (payload.$case === "statusUpdate") {
        seen.push(`status:${TaskState[payload.value.status!.state]}`);
        const text = payload.value.status?.message?.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
        if (text?.includes('"progress"')) progress = JSON.parse(text);
      } else seen.push(payload.$case);
      if (payload.$case === "artifactUpdate") {
        chunks++;
        const text = payload.value.artifact!.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
        // append: false replaces what came before (the final whole answer).
        answer = payload.value.append ? answer + text : text;
      }
    }
    assert.equal(seen[0], "task");
    assert.ok(seen.includes("status:TASK_STATE_WORKING"));
    assert.deepEqual(progress, { type: "progress", step: 1, max_steps: 5, action: "tool_call", target: "echo" });
    assert.ok(chunks > 2, "the answer arrives in chunks");
    assert.equal(seen.at(-1), "status:TASK_STATE_COMPLETED");
    assert.equal(answer, "A2A answer");
  });

  it("names the version header as the SDK does (the card route has its own copy, so it need not load the SDK)", () => {
    assert.equal(OUR_VERSION_HEADER, A2A_VERSION_HEADER);
  });

  it("answers an unknown task with a JSON-RPC error", async () => {
    await assert.rejects(client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined }), /not found/i);
  });

  it("speaks A2A 0.3 JSON-RPC to clients that send no A2A-Version (KAOS)", async () => {
    const response = await fetch(`${test.url}/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "legacy hello" }] } },
      }),
    });
    assert.equal(response.status, 200);
    const body = (await response.json()) as { result: { kind: string; status: { state: string }; artifacts: Array<{ parts: Array<{ text: string }> }> } };
    assert.equal(body.result.kind, "task");
    assert.equal(body.result.status.state, "completed");
    assert.equal(body.result.artifacts[0].parts[0].text, "A2A answer");
  });

  it("answers malformed JSON-RPC with a parse error, not a crash", async () => {
    const response = await fetch(`${test.url}/a2a`, { method: "POST", headers: { "content-type": "application/json" }, body: "{oops" });
    const body = (await response.json()) as { error: { code: number } };
    assert.equal(body.error.code, -32700);
  });

  it("lets another agentloop agent delegate to it over A2A", async () => {
    const tool = await a2aAgentTool({ cardUrl: test.url });
    assert.equal(tool.name, "delegate_to_a2a-agent");
    const parent = new Agent({ name: "parent", model: new ScriptedModel([JSON.stringify(toolCall(tool.name, { task: "ask it" })), "parent done"]), tools: [tool] });
    const result = await parent.run("go");
    assert.equal(result.state, "COMPLETED");
    const toolResult = result.messages.find((message) => message.role === "tool");
    assert.match(JSON.stringify(toolResult), /A2A answer/);
  });
});

describe("A2A cancel", () => {
  it("cancels a running task and aborts its run", async () => {
    const model = new ScriptedModel([Array.from({ length: 300 }, (_, index) => `w${index}`).join(" ")], { chunkDelayMs: 10 });
    const test = await startTestServer({}, { build: { model } });
    try {
      const client = await new ClientFactory().createFromUrl(test.url);
      const message = userMessage("long job");
      const started = (await client.sendMessage(request(message, true))) as Task;
      assert.notEqual(started.status?.state, TaskState.TASK_STATE_COMPLETED);
      const canceled = await client.cancelTask({ tenant: "", id: started.id, metadata: undefined });
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      await test.waitForLog(new RegExp(`session ${message.contextId} ABORTED`));
    } finally {
      await test.close();
    }
  });
});

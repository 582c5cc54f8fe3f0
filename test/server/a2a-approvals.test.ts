import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { type Message, type Part, Role, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import { type Client, ClientFactory } from "@a2a-js/sdk/client";
import { ScriptedModel } from "../../src/index.js";
import { startTestServer, type TestServer, writeFileTool } from "./helpers.js";

const written: string[] = [];
const writeFile = writeFileTool(written);
const twoWrites = () =>
  new ScriptedModel([
    JSON.stringify({ tool_calls: [{ id: "call_a", name: "write_file", arguments: { path: "a.txt" } }, { id: "call_b", name: "write_file", arguments: { path: "b.txt" } }] }),
    "Done writing.",
  ]);

const message = (parts: Part[], contextId: string, taskId = ""): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const text = (value: string): Part => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });
const data = (value: Record<string, unknown>): Part => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" });
const request = (body: Message) => ({ tenant: "", message: body, configuration: undefined, metadata: undefined });

interface Pending {
  tool_call_id: string;
  tool: string;
  arguments: Record<string, unknown>;
  arguments_hash: string;
  agent_path: string[];
}
/** The `approval_required` data part of a task's status message. */
function approvalOf(task: Task): { session_id: string; checkpoint_id: string; pending: Pending[] } {
  for (const part of task.status?.message?.parts ?? []) {
    if (part.content?.$case === "data" && part.content.value?.approval_required) return part.content.value.approval_required;
  }
  throw new Error(`no approval_required data part in ${JSON.stringify(task.status)}`);
}
const statusText = (task: Task) => (task.status?.message?.parts ?? []).map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
const answerOf = (task: Task) =>
  task.artifacts
    .flatMap((artifact) => artifact.parts)
    .map((part) => (part.content?.$case === "text" ? part.content.value : ""))
    .join("");

describe("approvals across A2A (the official @a2a-js/sdk client)", () => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({ AGENT_NAME: "writer" }, { build: { model: twoWrites(), tools: [writeFile] } });
    client = await new ClientFactory().createFromUrl(server.url);
  });
  after(() => server.close());

  it("a run that reaches an approval is input-required with the pending calls; decisions on the task resume it and it completes", async () => {
    written.length = 0;
    const contextId = randomUUID();
    const asked = (await client.sendMessage(request(message([text("write both files")], contextId)))) as Task;
    assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(statusText(asked), /Approval required: 2 tool call\(s\)/);
    const approval = approvalOf(asked);
    assert.equal(approval.session_id, contextId);
    assert.deepEqual(
      approval.pending.map((entry) => [entry.tool_call_id, entry.tool, entry.arguments, entry.agent_path]),
      [
        ["call_a", "write_file", { path: "a.txt" }, ["writer"]],
        ["call_b", "write_file", { path: "b.txt" }, ["writer"]],
      ],
    );
    assert.match(approval.pending[0]!.arguments_hash, /^[0-9a-f]{32}$/);
    assert.deepEqual(written, [], "nothing runs before the decisions");
    const fetched = await client.getTask({ tenant: "", id: asked.id, historyLength: undefined });
    assert.equal(fetched.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);

    // Bad decisions: the task keeps waiting, told why, with the pending calls still there.
    const wrong = (await client.sendMessage(request(message([data({ decisions: { call_z: { approve: true } } })], contextId, asked.id)))) as Task;
    assert.equal(wrong.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(statusText(wrong), /Not resumed: .*no approval is pending for tool call "call_z"/);
    assert.equal(approvalOf(wrong).pending.length, 2);
    const malformed = (await client.sendMessage(request(message([data({ decisions: { call_a: "yes" } })], contextId, asked.id)))) as Task;
    assert.equal(malformed.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(statusText(malformed), /Not resumed: decisions\.call_a must be/);
    const plain = (await client.sendMessage(request(message([text("yes please")], contextId, asked.id)))) as Task;
    assert.equal(plain.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(statusText(plain), /send a message on it with a data part/);
    assert.deepEqual(written, []);

    // Stream the resume: the task goes working, then completes with the answer.
    const decisions = { call_a: { approve: true, arguments_hash: approval.pending[0]!.arguments_hash }, call_b: { approve: false, reason: "b.txt is read-only" } };
    const states: TaskState[] = [];
    for await (const event of client.sendMessageStream(request(message([data({ decisions })], contextId, asked.id))) as AsyncIterable<StreamResponse>) {
      if (event.payload?.$case === "statusUpdate") states.push(event.payload.value.status!.state);
    }
    const final = await client.getTask({ tenant: "", id: asked.id, historyLength: undefined });
    assert.equal(states.at(-1), TaskState.TASK_STATE_COMPLETED);
    assert.ok(states.includes(TaskState.TASK_STATE_WORKING));
    assert.equal(final.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(answerOf(final), "Done writing.");
    assert.deepEqual(written, ["a.txt"], "the approved call ran once, the rejected one never");
    const events = (await (await fetch(`${server.url}/memory/events?session_id=${contextId}`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
    const results = events.events.filter((event) => event.event_type === "tool_result").map((event) => (event.content as { result: string }).result);
    assert.deepEqual(results, ["wrote a.txt", "Rejected: b.txt is read-only"]);

    // The task has ended: another message on it is refused by the SDK.
    await assert.rejects(client.sendMessage(request(message([data({ decisions })], contextId, asked.id))), /terminal state/);
  });
});

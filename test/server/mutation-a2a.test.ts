// The A2A endpoint's own checks and answers (src/server/a2a-*.ts, routes/a2a.ts), over real HTTP
// on loopback: raw JSON-RPC where the exact wire matters (0.3's JSON is plain; 1.0 with
// `A2A-Version: 1.0`), the official @a2a-js/sdk client where a client's view is the point.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { after, before, describe, it } from "node:test";
import type { Model } from "../../src/index.js";
import type { ModelEvent } from "../../src/model/model.js";
// Loaded with this file, not on the first A2A request: the modules' constants are then seen by
// every test here (the mutation runner counts what a file reaches while loading for all its tests).
import "../../src/server/a2a-endpoint.js";
import { ScriptedModel } from "../../src/index.js";
import { script, startTestServer, type TestServer, toolCall, writeFileTool } from "./helpers.js";

interface RpcAnswer {
  status: number;
  contentType: string | null;
  body: { jsonrpc: string; id: unknown; result?: any; error?: { code: number; message: string; data?: any } };
}

/** One JSON-RPC request (id 7 unless the envelope says otherwise) at `path`. */
async function rpc(url: string, method: string, params: unknown, version?: string, options: { id?: unknown; path?: string } = {}): Promise<RpcAnswer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (version) headers["A2A-Version"] = version;
  const envelope = { jsonrpc: "2.0", id: "id" in options ? options.id : 7, method, params };
  const response = await fetch(`${url}${options.path ?? "/a2a"}`, { method: "POST", headers, body: JSON.stringify(envelope) });
  return { status: response.status, contentType: response.headers.get("content-type"), body: (await response.json()) as RpcAnswer["body"] };
}

/** A POST with exactly these headers (fetch would add a Content-Type of its own to a text body). */
function rawPost(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  const target = new URL(`${url}/a2a`);
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => {
        text += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
    });
    request.on("error", reject);
    request.end(body);
  });
}

/** A 0.3 user message (`message/send`'s params.message). */
const legacyMessage = (parts: unknown[], extra: Record<string, unknown> = {}) => ({ kind: "message", messageId: randomUUID(), role: "user", parts, ...extra });
const legacyText = (text: string) => ({ kind: "text", text });

/** The SSE events of a response body: each `data:` parsed, with its `event:` name when it has one. */
async function sseEvents(response: Response): Promise<Array<{ event?: string; data: any }>> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((line) => line.startsWith("event: "))?.slice("event: ".length);
      const data = JSON.parse(
        lines
          .filter((line) => line.startsWith("data: "))
          .map((line) => line.slice("data: ".length))
          .join("\n"),
      );
      return event === undefined ? { data } : { event, data };
    });
}

const INVALID_PARAMS_INFO = [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_PARAMS", domain: "a2a-protocol.org" }];

describe("A2A: params the SDK would read leniently are refused as invalid params", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("Answer.") }, { build: {} });
  });
  after(() => test.close());

  it("statusTimestampAfter must be an RFC 3339 timestamp of a real moment", async () => {
    const rejected: unknown[] = [
      "2024-00-10T00:00:00Z", // month 0
      "2024-13-01T00:00:00Z", // month 13
      "2024-01-00T00:00:00Z", // day 0
      "2024-04-31T00:00:00Z", // April has 30 days
      "2024-01-01T24:00:00Z", // hour 24
      "2024-01-01T00:60:00Z", // minute 60
      "2024-01-01T00:00:61Z", // second 61
      "2024-01-01T00:00:00+24:00", // offset hour 24
      "2024-01-01T00:00:00+01:60", // offset minute 60
      "2024-01-01 00:00:00Z", // no T
      "2024-01-01T00:00:00", // no zone
      " 2024-01-01T00:00:00Z", // text before
      "2024-01-01T00:00:00Zjunk", // text after
      5, // not a string
    ];
    for (const value of rejected) {
      for (const field of ["statusTimestampAfter", "status_timestamp_after"]) {
        const answer = await rpc(test.url, "ListTasks", { [field]: value }, "1.0");
        assert.deepEqual(
          answer.body.error,
          { code: -32602, message: `statusTimestampAfter must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z, got ${JSON.stringify(value)}`, data: INVALID_PARAMS_INFO },
          `${field}: ${JSON.stringify(value)}`,
        );
      }
    }
    const accepted: unknown[] = ["2024-01-01t00:00:00z", "2024-12-31T23:59:59-23:59", "2024-02-29T00:00:00.123456Z", "", null];
    for (const value of accepted) {
      const answer = await rpc(test.url, "ListTasks", { statusTimestampAfter: value }, "1.0");
      assert.ok(answer.body.result, `${JSON.stringify(value)}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error, undefined);
    }
    // A leap second is RFC 3339 (the SDK's own date check then refuses it, in its own words).
    const leap = await rpc(test.url, "ListTasks", { statusTimestampAfter: "2024-06-30T12:30:60+05:30" }, "1.0");
    assert.doesNotMatch(leap.body.error?.message ?? "", /RFC 3339/, JSON.stringify(leap.body));
  });

  it("historyLength must be a non-negative integer (GetTask, tasks/get, ListTasks; either spelling)", async () => {
    for (const value of [-1, 1.5, "3", true]) {
      for (const [method, version] of [
        ["GetTask", "1.0"],
        ["tasks/get", undefined],
        ["ListTasks", "1.0"],
      ] as const) {
        for (const field of ["historyLength", "history_length"]) {
          const answer = await rpc(test.url, method, { id: "any", [field]: value }, version);
          const message = `historyLength must be a non-negative integer, got ${JSON.stringify(value)}`;
          // A 0.3 error carries no ErrorInfo detail; a 1.0 one does.
          const expected = version ? { code: -32602, message, data: INVALID_PARAMS_INFO } : { code: -32602, message };
          assert.deepEqual(answer.body.error, expected, `${method} ${field}=${JSON.stringify(value)}`);
          assert.equal(answer.body.id, 7);
        }
      }
    }
    // 0 and null are fine: the task is then looked for (and not found).
    for (const params of [{ historyLength: 0 }, { historyLength: null }, { history_length: null }, { history_length: 0 }]) {
      const answer = await rpc(test.url, "GetTask", { id: "nope", ...params }, "1.0");
      assert.equal(answer.body.error?.code, -32001, JSON.stringify(answer.body));
    }
    // Only ListTasks has a timestamp to check.
    for (const [method, version] of [
      ["GetTask", "1.0"],
      ["tasks/get", undefined],
    ] as const) {
      const answer = await rpc(test.url, method, { id: "nope", statusTimestampAfter: "nonsense" }, version);
      assert.equal(answer.body.error?.code, -32001, JSON.stringify(answer.body));
    }
    const listed = await rpc(test.url, "ListTasks", { historyLength: 0 }, "1.0");
    assert.ok(listed.body.result, JSON.stringify(listed.body));
  });

  it("configuration.historyLength of the send methods (1.0 and 0.3, streaming or not)", async () => {
    for (const [method, version] of [
      ["SendMessage", "1.0"],
      ["SendStreamingMessage", "1.0"],
      ["message/send", undefined],
      ["message/stream", undefined],
    ] as const) {
      for (const field of ["historyLength", "history_length"]) {
        const answer = await rpc(test.url, method, { message: legacyMessage([legacyText("x")]), configuration: { [field]: -2 } }, version, { id: "req-1" });
        assert.equal(answer.body.error?.code, -32602, `${method} ${field}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error?.message, "configuration.historyLength must be a non-negative integer, got -2");
        assert.equal(answer.body.id, "req-1", "a string id comes back as it was");
      }
    }
  });

  it("leaves other methods and params that are not an object to the SDK", async () => {
    const unknown = await rpc(test.url, "NoSuchMethod", { historyLength: -1 }, "1.0");
    assert.equal(unknown.body.error?.code, -32601, JSON.stringify(unknown.body));
    const notObject = await rpc(test.url, "tasks/get", [{ historyLength: -1 }]);
    assert.doesNotMatch(notObject.body.error?.message ?? "", /historyLength/, JSON.stringify(notObject.body));
    // A configuration that is not an object has no historyLength to check: the message is sent.
    const sent = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("hi")]), configuration: "none" });
    assert.doesNotMatch(JSON.stringify(sent.body), /historyLength/);
  });

  it("ListTasks' pageSize is the number of tasks returned; an SDK error is passed on as it is", async () => {
    const sent = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("one")]) });
    assert.equal(sent.body.result?.status?.state, "completed");
    const listed = await rpc(test.url, "ListTasks", { pageSize: 100 }, "1.0");
    assert.equal(listed.body.result.pageSize, listed.body.result.tasks.length);
    assert.ok(listed.body.result.tasks.length >= 1);
    const refused = await rpc(test.url, "ListTasks", { pageSize: -3 }, "1.0");
    assert.deepEqual(refused.body.error, { code: -32602, message: "pageSize must be between 1 and 100", data: INVALID_PARAMS_INFO });
  });
});

describe("A2A: Content-Type, protocol versions, paths and malformed requests", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("Answer.") }, { build: {} });
  });
  after(() => test.close());

  const getTask = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "nope" } });

  it("takes JSON by any name (or no Content-Type at all) and refuses anything else with -32005", async () => {
    for (const type of [undefined, "", "application/json; charset=utf-8", "application/json ; charset=utf-8", "APPLICATION/JSON", "application/vnd.a2a+json"]) {
      const answer = await rawPost(test.url, type === undefined ? {} : { "content-type": type }, getTask);
      assert.equal(JSON.parse(answer.text).error.code, -32001, `${type}: ${answer.text}`);
    }
    for (const type of ["text/plain", "text/x+json", "application/jsonl", "multipart/form-data; boundary=x"]) {
      const legacy = JSON.parse((await rawPost(test.url, { "content-type": type }, getTask)).text);
      assert.deepEqual(legacy, { jsonrpc: "2.0", id: null, error: { code: -32005, message: `Content-Type ${type} is not supported; send application/json` } }, type);
    }
    const modern = JSON.parse((await rawPost(test.url, { "content-type": "text/plain", "a2a-version": "1.0" }, getTask)).text);
    assert.deepEqual(modern.error.data, [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "CONTENT_TYPE_NOT_SUPPORTED", domain: "a2a-protocol.org" }]);
  });

  it("answers in the version asked for: 0.3 without A2A-Version or with 0.3, 1.0 with 1.0; refuses another", async () => {
    const message = () => ({ message: legacyMessage([legacyText("hi")]) });
    for (const version of [undefined, "0.3"]) {
      const answer = await rpc(test.url, "message/send", message(), version);
      assert.equal(answer.body.result?.kind, "task", `${version}: ${JSON.stringify(answer.body)}`);
    }
    const modern = await rpc(test.url, "SendMessage", { message: { role: "ROLE_USER", parts: [{ text: "hi" }], messageId: randomUUID() } }, "1.0");
    assert.equal(modern.body.result?.task?.status?.state, "TASK_STATE_COMPLETED", JSON.stringify(modern.body));
    const refused = await rpc(test.url, "GetTask", { id: "x" }, "2.0");
    assert.equal(refused.body.error?.code, -32009, JSON.stringify(refused.body));
    assert.equal(refused.body.id, 7);
  });

  it("answers at /a2a, /a2a/ and /", async () => {
    for (const path of ["/a2a", "/a2a/", "/"]) {
      const answer = await rpc(test.url, "tasks/get", { id: "nope" }, undefined, { path });
      assert.deepEqual(answer.body, { jsonrpc: "2.0", id: 7, error: { code: -32001, message: "Task not found: nope" } }, path);
    }
  });

  it("answers a body that is not JSON with a parse error, and one nested too deep with a 400 naming the limit", async () => {
    for (const body of ["", "   ", "{oops", "[1,"]) {
      const response = await fetch(`${test.url}/a2a`, { method: "POST", headers: { "content-type": "application/json" }, body });
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the body is not valid JSON" } }, JSON.stringify(body));
    }
    const deep = await fetch(`${test.url}/a2a`, { method: "POST", headers: { "content-type": "application/json" }, body: `${"[".repeat(100)}${"]".repeat(100)}` });
    assert.equal(deep.status, 400);
    const limit = "the request body nests JSON deeper than 64 levels (arrays and objects); flatten it";
    assert.deepEqual(await deep.json(), {
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: `Invalid Request: ${limit}`, data: { message: limit, type: "invalid_request_error", param: null, code: "json_too_deep" } },
    });
  });

  it("refuses a contextId that is not a valid session id with a 400 naming where it was", async () => {
    const problem = (path: string) => `${path} must be 1-200 characters of letters, digits, '_', '.', ':', '@' or '-', starting with a letter or digit`;
    for (const [id, expectedId] of [
      [7, 7],
      ["abc", "abc"],
      [{ not: "an id" }, null],
      [undefined, null],
    ] as const) {
      for (const contextId of ["../etc", 5, " lead", "x".repeat(201)]) {
        const answer = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("hi")], { contextId }) }, undefined, { id });
        assert.equal(answer.status, 400, JSON.stringify(contextId));
        assert.deepEqual(answer.body, {
          jsonrpc: "2.0",
          id: expectedId,
          error: {
            code: -32602,
            message: `Invalid params: ${problem("params.message.contextId")}`,
            data: { message: problem("params.message.contextId"), type: "invalid_request_error", param: "params.message.contextId", code: "invalid_session_id" },
          },
        });
      }
    }
    const listed = await rpc(test.url, "ListTasks", { contextId: "a/b" }, "1.0");
    assert.equal(listed.status, 400);
    assert.equal(listed.body.error?.data?.param, "params.contextId");
    // Absent, null or empty (the SDK makes one) is fine, as is a valid one, which becomes the session.
    for (const contextId of [undefined, null, ""]) {
      const answer = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("hi")], { contextId }) });
      assert.equal(answer.body.result?.status?.state, "completed", JSON.stringify(answer.body));
    }
    const named = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("hi")], { contextId: "team.a:b@c-1_2" }) });
    assert.equal(named.body.result?.contextId, "team.a:b@c-1_2");
    // A body or params that are not objects have no contextId to check: the SDK answers them.
    for (const body of [["x"], "text", null]) {
      const response = await fetch(`${test.url}/a2a`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const answer = (await response.json()) as RpcAnswer["body"];
      assert.notEqual(answer.error?.data?.code, "invalid_session_id", JSON.stringify(answer));
    }
    // Null params or a null message: the SDK's own JSON-RPC error, not a crash.
    for (const [method, params] of [
      ["tasks/get", null],
      ["tasks/resubscribe", null],
      ["tasks/resubscribe", [1]],
      ["message/send", { message: null }],
    ] as const) {
      const response = await fetch(`${test.url}/a2a`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 4, method, params }) });
      assert.equal(response.status, 200, `${method} ${JSON.stringify(params)}`);
      const text = await response.text();
      assert.doesNotMatch(text, /-32603|internal/i, `${method} ${JSON.stringify(params)}: ${text}`);
      assert.match(text, /"code":-326\d\d/, `${method} ${JSON.stringify(params)}: ${text}`);
    }
  });
});

describe("A2A: what a task reports", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ DEBUG_MOCK_RESPONSES: script(toolCall("echo", { text: "hi" }), "The answer is here.", "Plain.", "Plain.", "Plain.", "Plain.") });
  });
  after(() => test.close());

  it("streams the task, working updates with the tool calls as data parts, the answer's chunks, then completed", async () => {
    const response = await fetch(`${test.url}/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "message/stream", params: { message: legacyMessage([legacyText("stream it")], { contextId: "stream-ctx" }) } }),
    });
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    assert.equal(response.headers.get("cache-control"), "no-cache");
    const events = (await sseEvents(response)).map((event) => event.data.result);
    const task = events[0];
    assert.equal(task.kind, "task");
    assert.equal(task.status.state, "submitted");
    for (const event of events.slice(1)) {
      assert.equal(event.taskId, task.id);
      assert.equal(event.contextId, "stream-ctx");
    }
    assert.deepEqual(
      task.history.map((message: any) => [message.role, message.parts]),
      [["user", [{ kind: "text", text: "stream it" }]]],
    );
    assert.equal(task.artifacts, undefined, "a new task has no artifact yet");
    const statuses = events.filter((event) => event.kind === "status-update");
    assert.equal(statuses[0].status.state, "working");
    assert.equal(statuses[0].status.message, undefined, "working, with nothing to say yet");
    assert.equal(statuses.filter((status) => status.status.message?.parts.some((part: any) => part.kind === "text")).length, 2, "the progress block and the final answer carry text");
    for (const status of statuses) assert.ok(!Number.isNaN(Date.parse(status.status.timestamp)), JSON.stringify(status));
    // The tool call's events as data parts; the progress block also as JSON text.
    const wire = statuses.flatMap((status) => (status.status.message?.parts ?? []).filter((part: any) => part.kind === "data").map((part: any) => part.data.agentloop_event.type));
    assert.deepEqual(wire, ["progress", "tool-start", "tool-end"]);
    const progress = statuses.find((status) => status.status.message?.parts.some((part: any) => part.kind === "text"));
    assert.equal(progress.status.message.role, "agent");
    assert.deepEqual(JSON.parse(progress.status.message.parts[0].text), { type: "progress", step: 1, max_steps: 5, action: "tool_call", target: "echo" });
    assert.equal(progress.status.message.taskId, task.id);
    assert.equal(progress.status.message.contextId, "stream-ctx");
    // Chunks: the first starts the artifact, the next append, the last replaces them with the whole answer.
    const chunks = events.filter((event) => event.kind === "artifact-update");
    assert.ok(chunks.length > 3, JSON.stringify(chunks));
    assert.deepEqual(
      chunks.map((chunk) => [chunk.append ?? false, chunk.lastChunk ?? false]),
      [[false, false], ...chunks.slice(1, -1).map(() => [true, false]), [false, true]],
    );
    for (const chunk of chunks) {
      assert.equal(chunk.artifact.name, "answer");
      assert.equal(chunk.artifact.artifactId, chunks[0].artifact.artifactId);
      assert.notEqual(chunk.artifact.parts[0].text, "", "no empty chunk");
    }
    assert.equal(
      chunks
        .slice(0, -1)
        .map((chunk) => chunk.artifact.parts[0].text)
        .join(""),
      "The answer is here.",
    );
    assert.equal(chunks.at(-1).artifact.parts[0].text, "The answer is here.");
    const last = events.at(-1);
    assert.equal(last.status.state, "completed");
    assert.equal(last.status.message.parts[0].text, "The answer is here.");
  });

  it("skips a part with nothing in it (A2A 1.0) when it reads the text", async () => {
    const message = { role: "ROLE_USER", parts: [{}, { text: "only this" }], messageId: randomUUID(), contextId: "empty-part-ctx" };
    const sent = await rpc(test.url, "SendMessage", { message }, "1.0");
    assert.equal(sent.body.result?.task?.status?.state, "TASK_STATE_COMPLETED", JSON.stringify(sent.body));
    const events = (await (await fetch(`${test.url}/memory/events?session_id=empty-part-ctx`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
    assert.deepEqual(
      events.events.filter((event) => event.event_type === "user_message").map((event) => event.content),
      ["only this"],
    );
  });

  it("hands the agent the message's text parts joined, and rejects a message with no text", async () => {
    const parts = [legacyText("hel"), { kind: "data", data: { ignored: true } }, legacyText("lo")];
    const sent = await rpc(test.url, "message/send", { message: legacyMessage(parts, { contextId: "joined-ctx" }) });
    assert.equal(sent.body.result?.status?.state, "completed", JSON.stringify(sent.body));
    const events = (await (await fetch(`${test.url}/memory/events?session_id=joined-ctx`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
    assert.deepEqual(
      events.events.filter((event) => event.event_type === "user_message").map((event) => event.content),
      ["hello"],
    );
    for (const empty of [[legacyText("   ")], [{ kind: "data", data: { only: "data" } }]]) {
      const rejected = await rpc(test.url, "message/send", { message: legacyMessage(empty) });
      assert.equal(rejected.body.result?.status?.state, "rejected", JSON.stringify(rejected.body));
      assert.equal(rejected.body.result.status.message.parts[0].text, "the message has no text part");
      assert.equal(rejected.body.result.status.message.role, "agent");
    }
  });

  it("refuses to subscribe to a task that has ended (0.3's tasks/resubscribe too); the SDK's own errors come as an SSE error event", async () => {
    const rejected = await rpc(test.url, "message/send", { message: legacyMessage([legacyText(" ")]) });
    const taskId = rejected.body.result.id as string;
    const legacy = await rpc(test.url, "tasks/resubscribe", { id: taskId });
    assert.deepEqual(legacy.body, { jsonrpc: "2.0", id: 7, error: { code: -32004, message: `task ${taskId} has ended: there are no more updates to subscribe to` } });
    const modern = await rpc(test.url, "SubscribeToTask", { id: taskId }, "1.0");
    assert.equal(modern.body.error?.code, -32004);
    assert.ok(Array.isArray(modern.body.error?.data), "1.0 errors carry their ErrorInfo");
    for (const [method, version, params, error] of [
      ["tasks/resubscribe", undefined, { id: "nope" }, { code: -32001, message: "Task not found: nope" }],
      ["tasks/resubscribe", undefined, { id: "" }, { code: -32602, message: "Task ID is required" }],
      [
        "SubscribeToTask",
        "1.0",
        { id: "nope" },
        { code: -32001, message: "Task not found: nope", data: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "TASK_NOT_FOUND", domain: "a2a-protocol.org" }] },
      ],
    ] as const) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (version) headers["A2A-Version"] = version;
      const response = await fetch(`${test.url}/a2a`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 9, method, params }) });
      assert.equal(response.headers.get("content-type"), "text/event-stream");
      assert.deepEqual(await sseEvents(response), [{ event: "error", data: { jsonrpc: "2.0", id: 9, error } }], `${method} ${JSON.stringify(params)}`);
    }
  });
});

describe("A2A 1.0: the parts and messages of a task, as the SDK's client reads them", () => {
  it("text parts say text/plain; the answer is one artifact named answer; the status message is the agent's", async () => {
    const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("Exact answer.") }, { build: {} });
    try {
      const answer = await rpc(test.url, "SendMessage", { message: { role: "ROLE_USER", parts: [{ text: "hi" }], messageId: "m-1", contextId: "ctx-10" } }, "1.0");
      const task = answer.body.result.task;
      const message = task.status.message;
      assert.deepEqual({ ...message, messageId: typeof message.messageId }, {
        messageId: "string",
        contextId: "ctx-10",
        taskId: task.id,
        role: "ROLE_AGENT",
        parts: [{ text: "Exact answer.", mediaType: "text/plain" }],
      });
      assert.notEqual(message.messageId, "m-1");
      assert.deepEqual(
        task.artifacts.map((artifact: any) => ({ ...artifact, artifactId: typeof artifact.artifactId })),
        [{ artifactId: "string", name: "answer", parts: [{ text: "Exact answer.", mediaType: "text/plain" }] }],
      );
      assert.ok(!Number.isNaN(Date.parse(task.status.timestamp)));
    } finally {
      await test.close();
    }
  });
});

describe("A2A cancel", () => {
  it("aborts the running task's run with a reason that says so; the task stays canceled with no message", async () => {
    const model = new ScriptedModel([Array.from({ length: 400 }, (_, index) => `w${index}`).join(" ")], { chunkDelayMs: 10 });
    const test = await startTestServer({}, { build: { model } });
    try {
      const started = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("long job")], { contextId: "cancel-ctx" }), configuration: { blocking: false } });
      const taskId = started.body.result?.id as string;
      assert.ok(taskId, JSON.stringify(started.body));
      const canceled = await rpc(test.url, "tasks/cancel", { id: taskId });
      assert.equal(canceled.body.result?.status?.state, "canceled", JSON.stringify(canceled.body));
      await test.waitForLog(/session cancel-ctx ABORTED/);
      const events = (await (await fetch(`${test.url}/memory/events?session_id=cancel-ctx`)).json()) as { events: Array<{ event_type: string; content: any }> };
      const ended = events.events.find((event) => event.event_type === "run_ended");
      assert.equal(ended?.content.state, "ABORTED");
      assert.match(JSON.stringify(ended?.content), /task canceled through A2A/);
      const fetched = await rpc(test.url, "tasks/get", { id: taskId });
      assert.equal(fetched.body.result.status.state, "canceled");
      assert.equal(fetched.body.result.status.message, undefined);
      assert.equal(fetched.body.result.contextId, "cancel-ctx");
    } finally {
      await test.close();
    }
  });
});

describe("A2A: a model that streams empty text", () => {
  it("sends no empty chunk", async () => {
    const model: Model = {
      provider: "test",
      modelId: "gappy",
      async *stream(): AsyncGenerator<ModelEvent> {
        yield { type: "text-start", id: "t" };
        for (const delta of ["", "Hello", "", " there", ""]) yield { type: "text-delta", id: "t", delta };
        yield { type: "text-end", id: "t" };
        yield { type: "finish", reason: { unified: "stop" } };
      },
    };
    const test = await startTestServer({}, { build: { model } });
    try {
      const response = await fetch(`${test.url}/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/stream", params: { message: legacyMessage([legacyText("hi")]) } }),
      });
      const chunks = (await sseEvents(response)).map((event) => event.data.result).filter((event) => event.kind === "artifact-update");
      assert.deepEqual(
        chunks.map((chunk) => [chunk.artifact.parts[0].text, chunk.append ?? false]),
        [
          ["Hello", false],
          [" there", true],
          ["Hello there", false],
        ],
      );
    } finally {
      await test.close();
    }
  });
});

describe("A2A: a run that fails", () => {
  it("ends its task failed with the error's message", async () => {
    const broken: Model = {
      provider: "test",
      modelId: "broken",
      // biome-ignore lint/correctness/useYield: a model that fails before its first event
      async *stream() {
        throw new Error("the model is on fire");
      },
    };
    const test = await startTestServer({}, { build: { model: broken } });
    try {
      const answer = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("hi")]) });
      const status = answer.body.result?.status;
      assert.equal(status?.state, "failed", JSON.stringify(answer.body));
      assert.equal(status.message.parts.length, 1);
      assert.equal(status.message.parts[0].text, "the model is on fire");
    } finally {
      await test.close();
    }
  });
});

describe("A2A approvals: the wire of an input-required task", () => {
  const written: string[] = [];
  let test: TestServer;
  before(async () => {
    const model = new ScriptedModel([
      JSON.stringify({ tool_calls: [{ id: "call_a", name: "write_file", arguments: { path: "a.txt" } }, { id: "call_b", name: "write_file", arguments: { path: "b.txt" } }] }),
      "Done writing.",
    ]);
    test = await startTestServer({ AGENT_NAME: "writer" }, { build: { model, tools: [writeFileTool(written)] } });
  });
  after(() => test.close());

  const ask = async (contextId: string) => {
    const answer = await rpc(test.url, "message/send", { message: legacyMessage([legacyText("write both")], { contextId }) });
    assert.equal(answer.body.result?.status?.state, "input-required", JSON.stringify(answer.body));
    return answer.body.result as { id: string; status: { message: { parts: any[] } } };
  };
  const answerOn = (taskId: string, contextId: string, parts: unknown[], method = "message/send") => rpc(test.url, method, { message: legacyMessage(parts, { contextId, taskId }) });

  it("says which calls wait in text, and carries them as a JSON data part", async () => {
    const contextId = randomUUID();
    const task = await ask(contextId);
    const [text, data, ...rest] = task.status.message.parts;
    assert.deepEqual(rest, []);
    assert.equal(text.text, "Approval required: 2 tool call(s) wait for a decision: write_file (call_a), write_file (call_b)");
    assert.equal(data.kind, "data");
    assert.deepEqual(Object.keys(data.data), ["approval_required"]);
    assert.equal(data.data.approval_required.session_id, contextId);
    // In 1.0 a data part names its media type.
    const modern = await rpc(test.url, "GetTask", { id: task.id }, "1.0");
    assert.deepEqual(modern.body.result.status.message.parts[1], { data: data.data, mediaType: "application/json" });
    assert.deepEqual(modern.body.result.status.message.parts[0], { text: text.text, mediaType: "text/plain" });
  });

  it("reads the decisions from the first data part that has them, after text and other data; the task works again", async () => {
    written.length = 0;
    const contextId = randomUUID();
    const task = await ask(contextId);
    const parts = [legacyText("here you go"), { kind: "data", data: { note: "no decisions here" } }, { kind: "data", data: { decisions: { call_a: { approve: true }, call_b: { approve: true } } } }];
    const response = await fetch(`${test.url}/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/stream", params: { message: legacyMessage(parts, { contextId, taskId: task.id }) } }),
    });
    const events = (await sseEvents(response)).map((event) => event.data.result);
    // The stream starts with the task, working again (not still input-required).
    assert.equal(events[0].kind, "task");
    assert.equal(events[0].status.state, "working");
    assert.equal(events[0].status.message, undefined);
    assert.equal(events.at(-1).status.state, "completed");
    assert.deepEqual(written.sort(), ["a.txt", "b.txt"]);
  });

  it("skips a part with nothing in it (A2A 1.0) before the decisions", async () => {
    const contextId = randomUUID();
    const task = await ask(contextId);
    const decisions = { call_a: { approve: false }, call_b: { approve: false } };
    const message = { role: "ROLE_USER", parts: [{}, { data: { decisions } }], messageId: randomUUID(), contextId, taskId: task.id };
    const answer = await rpc(test.url, "SendMessage", { message }, "1.0");
    assert.equal(answer.body.result?.task?.status?.state, "TASK_STATE_COMPLETED", JSON.stringify(answer.body));
  });

  it("a wrong answer keeps the task waiting: told why, with the pending calls and nothing else", async () => {
    const contextId = randomUUID();
    const task = await ask(contextId);
    const wrong = await answerOn(task.id, contextId, [{ kind: "data", data: { decisions: { call_z: { approve: true } } } }]);
    const status = wrong.body.result.status;
    assert.equal(status.state, "input-required");
    assert.deepEqual(
      status.message.parts.map((part: any) => part.kind),
      ["text", "data"],
    );
    assert.match(status.message.parts[0].text, /^Not resumed: .*no approval is pending for tool call "call_z"/);
    assert.deepEqual(status.message.parts[1], task.status.message.parts[1]);
    const malformed = await answerOn(task.id, contextId, [{ kind: "data", data: { decisions: [] } }]);
    assert.equal(malformed.body.result.status.state, "input-required");
    assert.deepEqual(
      malformed.body.result.status.message.parts.map((part: any) => part.kind),
      ["text", "data"],
    );
    assert.match(malformed.body.result.status.message.parts[0].text, /^Not resumed: decisions must be/);
  });

  it("a task waiting for approvals (no run going on) can be canceled", async () => {
    const contextId = randomUUID();
    const task = await ask(contextId);
    const canceled = await rpc(test.url, "tasks/cancel", { id: task.id });
    assert.equal(canceled.body.result?.status?.state, "canceled", JSON.stringify(canceled.body));
  });

  it("decisions the server no longer waits for (decided through POST /v1/approvals) fail the task, saying so", async () => {
    const contextId = randomUUID();
    const task = await ask(contextId);
    const decided = await fetch(`${test.url}/v1/approvals`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ session_id: contextId, decisions: { call_a: { approve: false }, call_b: { approve: false } }, stream: false }),
    });
    assert.equal(decided.status, 200, await decided.clone().text());
    await decided.text();
    const late = await answerOn(task.id, contextId, [{ kind: "data", data: { decisions: { call_a: { approve: true }, call_b: { approve: true } } } }]);
    const status = late.body.result.status;
    assert.equal(status.state, "failed", JSON.stringify(late.body));
    assert.match(status.message.parts[0].text, /decided already|no approval is pending/);
  });
});

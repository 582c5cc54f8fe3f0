// What the A2A TCK (1.0 and 0.3) checks of the endpoint, driven by raw JSON-RPC and the A2A SDK client.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { type Message, Role, type Task, TaskState } from "@a2a-js/sdk";
import { type Client, ClientFactory } from "@a2a-js/sdk/client";
import { isLegacyAgentCard, LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { isRfc3339 } from "../../src/server/a2a-validation.js";
import { script, startTestServer, type TestServer } from "./helpers.js";

const userMessage = (text: string): Message => ({
  messageId: randomUUID(),
  contextId: randomUUID(),
  taskId: "",
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const send = (message: Message) => ({
  tenant: "",
  message,
  configuration: { acceptedOutputModes: ["text/plain"], taskPushNotificationConfig: undefined, returnImmediately: false },
  metadata: undefined,
});

async function rpc(url: string, method: string, params: unknown, version: string | undefined = "1.0", contentType = "application/json") {
  const headers: Record<string, string> = { "content-type": contentType };
  if (version) headers["A2A-Version"] = version;
  const response = await fetch(`${url}/a2a`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }) });
  return (await response.json()) as { id: unknown; result?: Record<string, any>; error?: { code: number; message: string; data?: unknown[] } };
}

describe("A2A conformance: an agent without tools", () => {
  let test: TestServer;
  let client: Client;
  before(async () => {
    test = await startTestServer(
      { AGENT_NAME: "plain", AGENT_DESCRIPTION: "Answers questions.", AGENT_PUBLIC_URL: "https://agents.example.com/plain/", DEBUG_MOCK_RESPONSES: script("Answer.") },
      { build: {} },
    );
    // The card advertises the public URL, so the SDK client is pointed at the real address by hand.
    const card = (await (await fetch(`${test.url}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })).json()) as Record<string, any>;
    card.supportedInterfaces = card.supportedInterfaces.map((entry: Record<string, unknown>) => ({ ...entry, url: `${test.url}/a2a` }));
    client = await new ClientFactory().createFromAgentCard(card as never);
  });
  after(() => test.close());

  it("publishes the agent itself as its one skill, at the public URL (AGENT_PUBLIC_URL)", async () => {
    const response = await fetch(`${test.url}/.well-known/agent-card.json`);
    const card = (await response.json()) as Record<string, any>;
    assert.deepEqual(
      card.skills.map((skill: { id: string; name: string; description: string }) => [skill.id, skill.name, skill.description]),
      [["plain", "plain", "Answers questions."]],
    );
    assert.equal(card.supportedInterfaces[0].url, "https://agents.example.com/plain/a2a");
    assert.match(response.headers.get("vary") ?? "", /A2A-Version/i);
  });

  it("serves a pure 1.0 card at agent-card.json to a client that names no version (the TCK 1.0's CARD-STRUCT-001)", async () => {
    for (const headers of [{}, { "A2A-Version": "1.0" }] as Array<Record<string, string>>) {
      const card = (await (await fetch(`${test.url}/.well-known/agent-card.json`, { headers })).json()) as Record<string, any>;
      // The 1.0 AgentCard's fields (a2a.json), and no other: the strict schema allows no more.
      const fields = ["name", "description", "version", "supportedInterfaces", "provider", "capabilities", "securitySchemes", "securityRequirements", "defaultInputModes", "defaultOutputModes", "skills", "signatures", "documentationUrl", "iconUrl"];
      assert.deepEqual(Object.keys(card).filter((field) => !fields.includes(field)), [], JSON.stringify(headers));
      assert.equal(card.supportedInterfaces.length, 2);
    }
  });

  it("adds the 0.3 fields for a client that says 0.3 (header or query parameter) and at the pre-1.0 path agent.json", async () => {
    for (const [path, headers] of [
      ["/.well-known/agent-card.json", { "A2A-Version": "0.3" }],
      ["/.well-known/agent-card.json?A2A-Version=0.3", {}],
      ["/.well-known/agent.json", {}],
    ] as const) {
      const card = (await (await fetch(`${test.url}${path}`, { headers })).json()) as Record<string, any>;
      assert.equal(card.url, "https://agents.example.com/plain/a2a", path);
      assert.equal(card.protocolVersion, "0.3.0");
      assert.equal(card.preferredTransport, "JSONRPC");
    }
    const named = (await (await fetch(`${test.url}/.well-known/agent.json`, { headers: { "A2A-Version": "1.0" } })).json()) as Record<string, any>;
    assert.equal("url" in named, false, "a client that says 1.0 gets the 1.0 card at either path");
  });

  it("lets the card be cached: Cache-Control with max-age, an ETag, Last-Modified, and 304 to a conditional GET (CARD-CACHE-001/002/003)", async () => {
    const url = `${test.url}/.well-known/agent-card.json`;
    const first = await fetch(url);
    const body = await first.text();
    assert.match(first.headers.get("cache-control") ?? "", /^public, max-age=\d+$/);
    const etag = first.headers.get("etag");
    const lastModified = first.headers.get("last-modified");
    assert.ok(etag && lastModified, "ETag and Last-Modified are set");
    assert.ok(!Number.isNaN(Date.parse(lastModified)));
    // The same card, the same validators.
    const again = await fetch(url);
    assert.equal(await again.text(), body);
    assert.equal(again.headers.get("etag"), etag);
    assert.equal(again.headers.get("last-modified"), lastModified);

    for (const conditional of [{ "if-none-match": etag }, { "if-none-match": `"other", ${etag}` }, { "if-modified-since": lastModified }] as Array<Record<string, string>>) {
      const revalidated = await fetch(url, { headers: conditional });
      assert.equal(revalidated.status, 304, JSON.stringify(conditional));
      assert.equal(await revalidated.text(), "");
      assert.equal(revalidated.headers.get("etag"), etag);
      assert.match(revalidated.headers.get("cache-control") ?? "", /max-age=/);
    }
    // Another ETag, or the card for another version: the whole card.
    const stale = await fetch(url, { headers: { "if-none-match": '"stale"' } });
    assert.equal(stale.status, 200);
    assert.equal(await stale.text(), body);
    const legacy = await fetch(url, { headers: { "if-none-match": etag, "A2A-Version": "0.3" } });
    assert.equal(legacy.status, 200);
    assert.notEqual(legacy.headers.get("etag"), etag);
    assert.equal(((await legacy.json()) as { url: string }).url, "https://agents.example.com/plain/a2a");
  });

  it("ListTasks reports how many tasks it returned, not the page size asked for", async () => {
    for (const text of ["one", "two"]) {
      const task = (await client.sendMessage(send(userMessage(text)))) as Task;
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    }
    const listed = await client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 50 } as never);
    assert.equal(listed.tasks.length, 2);
    assert.equal(listed.pageSize, 2);
  });

  it("rejects a negative historyLength as invalid params (GetTask, ListTasks, SendMessage; 1.0 and 0.3)", async () => {
    await assert.rejects(client.getTask({ tenant: "", id: "any", historyLength: -5 }), /historyLength must be a non-negative integer, got -5/);
    for (const [method, params, version] of [
      ["ListTasks", { historyLength: -5 }, "1.0"],
      ["SendMessage", { message: { role: "ROLE_USER", parts: [{ text: "x" }], messageId: "m1" }, configuration: { historyLength: -1 } }, "1.0"],
      ["tasks/get", { id: "any", historyLength: -5 }, undefined],
    ] as const) {
      const body = await rpc(test.url, method, params, version);
      assert.equal(body.error?.code, -32602, `${method}: ${JSON.stringify(body)}`);
      assert.equal(body.id, 7);
    }
  });

  it("rejects a statusTimestampAfter that is not an RFC 3339 timestamp, accepts one that is", async () => {
    for (const value of ["not-a-date", "2024-02-30T00:00:00Z", "2024-01-01", "Jan 1 2024"]) {
      const body = await rpc(test.url, "ListTasks", { statusTimestampAfter: value });
      assert.equal(body.error?.code, -32602, `${value}: ${JSON.stringify(body)}`);
      assert.match(body.error?.message ?? "", /statusTimestampAfter must be an RFC 3339 timestamp/);
    }
    const accepted = await rpc(test.url, "ListTasks", { statusTimestampAfter: "2000-01-01T00:00:00.5+01:00" });
    assert.ok(accepted.result, JSON.stringify(accepted));
    assert.equal(isRfc3339("2024-02-29T23:59:60Z"), true);
    assert.equal(isRfc3339("2023-02-29T00:00:00Z"), false);
  });

  it("refuses to subscribe to a task that has ended", async () => {
    const task = (await client.sendMessage(send(userMessage("finish")))) as Task;
    const body = await rpc(test.url, "SubscribeToTask", { id: task.id });
    assert.equal(body.error?.code, -32004, JSON.stringify(body));
    assert.match(body.error?.message ?? "", /has ended/);
  });

  it("answers a request that is not JSON by its Content-Type with ContentTypeNotSupportedError", async () => {
    const body = await rpc(test.url, "SendMessage", {}, "1.0", "text/plain");
    assert.equal(body.error?.code, -32005);
  });

  it("keeps working for the SDK's A2A 0.3 JSON-RPC client", async () => {
    // The SDK reads a card with supportedInterfaces as 1.0 and finds the 0.3 interface in it.
    const raw = (await (await fetch(`${test.url}/.well-known/agent-card.json`)).json()) as { supportedInterfaces: Array<{ protocolVersion: string }> };
    assert.equal(isLegacyAgentCard(raw), false);
    assert.deepEqual(
      raw.supportedInterfaces.map((entry) => entry.protocolVersion),
      ["1.0", "0.3"],
    );
    const legacy = new LegacyJsonRpcTransport({ endpoint: `${test.url}/a2a` });
    const task = (await legacy.sendMessage(send(userMessage("from 0.3")))) as Task;
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    await assert.rejects(legacy.getTask({ tenant: "", id: task.id, historyLength: -5 }), /historyLength/);
  });

  it("also answers at /a2a/ (clients that join the URL with a slash)", async () => {
    const response = await fetch(`${test.url}/a2a/`, {
      method: "POST",
      headers: { "content-type": "application/json", "A2A-Version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "missing" } }),
    });
    const body = (await response.json()) as { error: { code: number } };
    assert.equal(body.error.code, -32001);
  });
});

describe("A2A conformance: A2A_CARD_DEFAULT_VERSION=0.3", () => {
  it("serves the card with the 0.3 fields to a client that names no version, the pure 1.0 card to one that says 1.0", async () => {
    const test = await startTestServer({ A2A_CARD_DEFAULT_VERSION: "0.3", DEBUG_MOCK_RESPONSES: script("Answer.") }, { build: {} });
    try {
      const unnamed = (await (await fetch(`${test.url}/.well-known/agent-card.json`)).json()) as Record<string, any>;
      assert.equal(unnamed.url, `${test.url}/a2a`);
      assert.equal(unnamed.protocolVersion, "0.3.0");
      const modern = (await (await fetch(`${test.url}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })).json()) as Record<string, any>;
      assert.equal("url" in modern, false);
    } finally {
      await test.close();
    }
  });

  it("names the setting when its value is neither 1.0 nor 0.3", async () => {
    await assert.rejects(startTestServer({ A2A_CARD_DEFAULT_VERSION: "2", DEBUG_MOCK_RESPONSES: script("Answer.") }, { build: {} }), /A2A_CARD_DEFAULT_VERSION: must be 1\.0 or 0\.3, got "2"/);
  });
});

describe("A2A conformance: the card behind AGENT_API_KEY", () => {
  it("is the caller's to cache, not a shared cache's", async () => {
    const test = await startTestServer({ AGENT_API_KEY: "s3cret-key", DEBUG_MOCK_RESPONSES: script("Answer.") }, { build: {} });
    try {
      const response = await fetch(`${test.url}/.well-known/agent-card.json`, { headers: { authorization: "Bearer s3cret-key" } });
      assert.equal(response.status, 200);
      assert.match(response.headers.get("cache-control") ?? "", /^private, max-age=\d+$/);
    } finally {
      await test.close();
    }
  });
});

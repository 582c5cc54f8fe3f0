// What a client reads about the agent over real HTTP: the A2A and KAOS cards (and their caching),
// `GET /v1/agent` with its secrets redacted, the memory endpoints, the studio's assets, and the
// answers to a request whose store fails (src/server/agent-card.ts, routes/agent-card.ts,
// routes/agent-info.ts, routes/memory.ts, memory.ts, routes/studio.ts, context.ts).
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { defineTool, ScriptedModel } from "../../src/index.js";
import { InMemoryStore } from "../../src/memory/index.js";
import { everythingServerPath } from "../mcp/helpers.js";
import { script, startTestServer, type TestServer } from "./helpers.js";

const getJson = async (url: string, headers: Record<string, string> = {}) => {
  const response = await fetch(url, { headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
};

const lookUp = defineTool({ name: "look_up", description: "Looks a word up", parameters: { type: "object", properties: { word: { type: "string" } } }, execute: () => "found" });
const delegate = defineTool({ name: "delegate_to_helper", description: "Asks the helper", parameters: { type: "object", properties: { task: { type: "string" } } }, execute: () => "helped" });

describe("the agent cards", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "carded", AGENT_DESCRIPTION: "Has a card." }, { build: { model: new ScriptedModel(["ok"]), tools: [lookUp, delegate] } });
  });
  after(() => test.close());

  it("the A2A card: each tool a skill (delegation tools tagged so), the interfaces, capabilities and modes", async () => {
    const { body: card } = await getJson(`${test.url}/.well-known/agent.json`);
    const url = `${test.url}/a2a`;
    assert.deepEqual(card, {
      name: "carded",
      description: "Has a card.",
      version: "0.1.0",
      supportedInterfaces: [
        { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" },
        { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "0.3" },
      ],
      capabilities: {
        streaming: true,
        pushNotifications: false,
        extensions: [
          {
            uri: card.capabilities.extensions[0].uri,
            description: 'working status updates carry the run\'s tool calls and progress blocks as a data part { "agentloop_event": … }; input-required carries { "approval_required": … }',
            required: false,
          },
        ],
      },
      securitySchemes: {},
      securityRequirements: [],
      defaultInputModes: ["text/plain", "application/json"],
      defaultOutputModes: ["text/plain", "application/json"],
      skills: [
        { id: "look_up", name: "look_up", description: "Looks a word up", tags: ["tool"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
        { id: "delegate_to_helper", name: "delegate_to_helper", description: "Asks the helper", tags: ["delegation"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
      ],
      signatures: [],
      url,
      protocolVersion: "0.3.0",
      preferredTransport: "JSONRPC",
    });
    assert.match(card.capabilities.extensions[0].uri, /^https?:\/\/\S+/);
  });

  it("the version a client names picks the card: 0.x (spaces trimmed) gets the 0.3 fields, anything else the pure 1.0 card", async () => {
    const legacy = ["0.3", " 0.3 ", "0.2.5"];
    const modern = ["1.0", "1.1", " 1.0 "];
    for (const version of legacy) {
      const { body } = await getJson(`${test.url}/.well-known/agent-card.json`, { "A2A-Version": version });
      assert.equal(body.protocolVersion, "0.3.0", JSON.stringify(version));
    }
    for (const version of modern) {
      const { body } = await getJson(`${test.url}/.well-known/agent.json`, { "A2A-Version": version });
      assert.deepEqual([body.url, body.protocolVersion, body.preferredTransport], [undefined, undefined, undefined], JSON.stringify(version));
      assert.equal(body.name, "carded");
    }
    // A version that is only spaces names none: each path's own default.
    assert.equal((await getJson(`${test.url}/.well-known/agent.json`, { "A2A-Version": " " })).body.protocolVersion, "0.3.0");
    assert.equal((await getJson(`${test.url}/.well-known/agent-card.json`, { "A2A-Version": " " })).body.protocolVersion, undefined);
  });

  it("revalidation: the ETag compared weakly (a list, *, with or without W/), If-None-Match before If-Modified-Since", async () => {
    const url = `${test.url}/.well-known/agent-card.json`;
    const first = await fetch(url);
    await first.text();
    const etag = first.headers.get("etag")!;
    const lastModified = first.headers.get("last-modified")!;
    assert.match(etag, /^W\/"[A-Za-z0-9_-]{22}"$/);
    assert.equal(first.headers.get("vary"), "A2A-Version");
    assert.equal(first.headers.get("cache-control"), "public, max-age=300");
    assert.equal(first.headers.get("content-type"), "application/json");
    const strong = etag.slice(2);
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    const later = new Date(Date.parse(lastModified) + 60_000).toUTCString();
    for (const [headers, status] of [
      [{ "if-none-match": "*" }, 304],
      [{ "if-none-match": strong }, 304],
      [{ "if-none-match": ` "a" , ${strong} ` }, 304],
      [{ "if-none-match": `W/${strong.slice(0, -2)}x"` }, 200],
      [{ "if-none-match": '"a", "b"' }, 200],
      [{ "if-modified-since": lastModified }, 304],
      [{ "if-modified-since": later }, 304],
      [{ "if-modified-since": earlier }, 200],
      [{ "if-modified-since": "not a date" }, 200],
      // If-None-Match decides when both are sent.
      [{ "if-none-match": '"other"', "if-modified-since": later }, 200],
      [{ "if-none-match": strong, "if-modified-since": earlier }, 304],
    ] as Array<[Record<string, string>, number]>) {
      const response = await fetch(url, { headers });
      const body = await response.text();
      assert.equal(response.status, status, JSON.stringify(headers));
      assert.equal(response.headers.get("etag"), etag);
      assert.equal(response.headers.get("last-modified"), lastModified);
      if (status === 304) assert.equal(body, "");
      else assert.equal(JSON.parse(body).name, "carded");
    }
  });

  it("keeps each version's card's validators apart: asking for the other version changes neither", async () => {
    const url = `${test.url}/.well-known/agent-card.json`;
    const validators = async (headers: Record<string, string>) => {
      const response = await fetch(url, { headers });
      await response.text();
      return [response.headers.get("etag"), response.headers.get("last-modified")];
    };
    const modern = await validators({});
    const legacy = await validators({ "A2A-Version": "0.3" });
    assert.notEqual(legacy[0], modern[0]);
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(await validators({}), modern);
      assert.deepEqual(await validators({ "A2A-Version": "0.3" }), legacy);
    }
  });

  it("KAOS's card at /.well-known/agent: tools but not delegation tools as skills, the capabilities they bring", async () => {
    const { body } = await getJson(`${test.url}/.well-known/agent`);
    assert.deepEqual(body, {
      name: "carded",
      description: "Has a card.",
      url: test.url,
      skills: [{ name: "look_up", description: "Looks a word up", inputSchema: { type: "object", properties: { word: { type: "string" } } } }],
      capabilities: ["message_processing", "task_execution", "tool_execution", "task_delegation"],
    });
  });

  it("KAOS's card of an agent without tools: only the two capabilities every agent has; the A2A card lists the agent itself", async () => {
    const bare = await startTestServer({ AGENT_NAME: "bare", AGENT_DESCRIPTION: "Nothing else." }, { build: { model: new ScriptedModel(["ok"]) } });
    try {
      assert.deepEqual((await getJson(`${bare.url}/.well-known/agent`)).body, { name: "bare", description: "Nothing else.", url: bare.url, skills: [], capabilities: ["message_processing", "task_execution"] });
      const { body: card } = await getJson(`${bare.url}/.well-known/agent.json`);
      assert.deepEqual(card.skills, [{ id: "bare", name: "bare", description: "Nothing else.", tags: ["agent"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }]);
    } finally {
      await bare.close();
    }
  });

  it("KAOS's card of an agent with delegation tools only: task_delegation without tool_execution", async () => {
    const coordinator = await startTestServer({ AGENT_NAME: "coord" }, { build: { model: new ScriptedModel(["ok"]), tools: [delegate] } });
    try {
      const { body } = await getJson(`${coordinator.url}/.well-known/agent`);
      assert.deepEqual(body.capabilities, ["message_processing", "task_execution", "task_delegation"]);
      assert.deepEqual(body.skills, []);
    } finally {
      await coordinator.close();
    }
  });
});

describe("GET /v1/agent", () => {
  it("names the model and redacts every secret: URLs' passwords, the API key, MCP env values and client secrets, in any text", async () => {
    const folder = await mkdtemp(join(tmpdir(), "agentloop-agent-info-"));
    const file = join(folder, "agent.yaml");
    await writeFile(
      file,
      [
        "name: informed",
        "description: Tells about itself.",
        "instructions: Never say tok-123456, pw-remote-77, pw-model-42, pw-db-31, pw-peer-99 or key-456789.",
        "mcpServers:",
        "  - name: remote",
        "    url: http://user:pw-remote-77@127.0.0.1:9/mcp",
        "  - name: plain",
        "    url: http://127.0.0.1:9/plain",
        "  - name: local",
        "    command: definitely-not-a-command-xyz",
        "    env: { TOKEN: tok-123456 }",
      ].join("\n"),
    );
    const server = await startTestServer(
      {
        AGENT_API_KEY: "key-456789",
        MODEL_NAME: "gpt-test",
        MODEL_API_URL: "http://model:pw-model-42@127.0.0.1:9/v1",
        MEMORY_PG_URL: "postgres://db:pw-db-31@127.0.0.1:9/x",
        MEMORY_NOTE: "kept as is",
        PEER_AGENTS: "helper",
        PEER_AGENT_HELPER_CARD_URL: "http://peer:pw-peer-99@127.0.0.1:9/.well-known/agent",
      },
      { agentFile: file, readyTimeoutMs: 300 },
    );
    try {
      const response = await fetch(`${server.url}/v1/agent`, { headers: { authorization: "Bearer key-456789" } });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
      const text = await response.text();
      for (const secret of ["pw-remote-77", "tok-123456", "key-456789", "pw-model-42", "pw-db-31", "pw-peer-99"]) assert.ok(!text.includes(secret), `${secret} never leaves: ${text}`);
      const info = JSON.parse(text);
      assert.equal(info.name, "informed");
      assert.equal(info.description, "Tells about itself.");
      assert.equal(info.settings.model, "gpt-test at http://model:[redacted]@127.0.0.1:9/v1");
      assert.equal(info.settings.apiKey, "[redacted]");
      assert.deepEqual(info.settings.memory.MEMORY_PG_URL, "postgres://db:[redacted]@127.0.0.1:9/x");
      assert.equal(info.settings.memory.MEMORY_NOTE, "kept as is");
      assert.equal(info.settings.durable, false);
      assert.equal(info.card.name, "informed");
      const byName = Object.fromEntries(info.mcpServers.map((entry: { name: string }) => [entry.name, entry]));
      assert.equal(byName.remote.transport, "http");
      assert.equal(byName.remote.url, "http://user:[redacted]@127.0.0.1:9/mcp");
      assert.equal(byName.remote.state, "down");
      assert.equal(typeof byName.remote.reason, "string");
      assert.equal(byName.plain.url, "http://127.0.0.1:9/plain");
      assert.equal(byName.plain.auth, undefined);
      assert.equal("env" in byName.plain, false);
      assert.equal(info.settings.instructions, "Never say [redacted], [redacted], [redacted], [redacted], [redacted] or [redacted].");
      assert.equal(byName.local.transport, "stdio");
      assert.equal(byName.local.command, "definitely-not-a-command-xyz");
      assert.deepEqual(byName.local.args, []);
      assert.deepEqual(byName.local.env, { TOKEN: "[redacted]" });
      assert.equal(byName.local.url, undefined);
      assert.equal(byName.remote.command, undefined);
      assert.deepEqual(
        info.subAgents.map((peer: { name: string; url: string; state: string }) => [peer.name, peer.url, peer.state]),
        [["helper", "http://peer:[redacted]@127.0.0.1:9/", "down"]],
      );
      assert.equal(typeof info.subAgents[0].reason, "string");
      // Degraded (the peer and an MCP server down) is still ready to serve: 200.
      const ready = await fetch(`${server.url}/ready`);
      assert.equal(ready.status, 200);
      assert.equal(((await ready.json()) as { status: string }).status, "degraded");
    } finally {
      await server.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("names a scripted model as such, and shows a reachable peer and connected MCP-less agent plainly", async () => {
    const peer = await startTestServer({ AGENT_NAME: "peer", DEBUG_MOCK_RESPONSES: script("peer answer") });
    const server = await startTestServer({ AGENT_NAME: "asker", DEBUG_MOCK_RESPONSES: script("x"), PEER_AGENTS: "peer", PEER_AGENT_PEER_CARD_URL: `${peer.url}/.well-known/agent` });
    try {
      await server.server.ready();
      const { body: info } = await getJson(`${server.url}/v1/agent`);
      assert.equal(info.settings.model, "scripted (DEBUG_MOCK_RESPONSES)");
      assert.equal(info.settings.apiKey, undefined);
      assert.deepEqual(info.subAgents, [{ name: "peer", url: peer.url, protocol: "kaos", state: "reachable" }]);
      assert.deepEqual(info.mcpServers, []);
      assert.ok(info.tools.some((tool: { name: string }) => tool.name === "delegate_to_peer"), JSON.stringify(info.tools));
    } finally {
      await server.close();
      await peer.close();
    }
  });
});

describe("GET /ready while the agent is still being built", () => {
  it("is 503 starting until then; /health answers at once", async () => {
    // A peer that accepts the connection and never answers: the agent waits for its card.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as AddressInfo).port;
    const server = await startTestServer({ AGENT_NAME: "slow", DEBUG_MOCK_RESPONSES: script("x"), PEER_AGENTS: "mute", PEER_AGENT_MUTE_CARD_URL: `http://127.0.0.1:${port}/.well-known/agent` }, { readyTimeoutMs: 60_000 });
    try {
      const ready = await fetch(`${server.url}/ready`);
      assert.equal(ready.status, 503);
      assert.deepEqual(((await ready.json()) as { status: string; name: string }).status, "starting");
      const health = await getJson(`${server.url}/health`);
      assert.equal(health.status, 200);
      assert.deepEqual([health.body.status, health.body.name], ["healthy", "slow"]);
      assert.ok(Number.isInteger(health.body.timestamp) && Math.abs(health.body.timestamp - Date.now() / 1000) < 60, String(health.body.timestamp));
    } finally {
      await server.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("the memory endpoints", () => {
  let test: TestServer;
  const store = new InMemoryStore({ maxEventsPerSession: 5000 });
  before(async () => {
    await store.append("many", Array.from({ length: 1100 }, (_, index) => ({ event_type: "user_message", content: `m${index}`, metadata: { n: index } })));
    await store.append("few", [{ event_type: "agent_response", content: "hi", metadata: { source: "test" } }]);
    test = await startTestServer({ AGENT_NAME: "remembers" }, { build: { model: new ScriptedModel(["ok"]) }, memory: store });
  });
  after(() => test.close());

  it("GET /memory/events: KAOS's five fields with the session in metadata; 100 by default, at most 1000, the last ones", async () => {
    const few = await getJson(`${test.url}/memory/events?session_id=few`);
    assert.equal(few.body.agent, "remembers");
    assert.equal(few.body.total, 1);
    const [event] = few.body.events;
    assert.deepEqual(Object.keys(event).sort(), ["content", "event_id", "event_type", "metadata", "timestamp"]);
    assert.deepEqual([event.event_type, event.content, event.metadata], ["agent_response", "hi", { source: "test", session_id: "few" }]);
    assert.ok(!Number.isNaN(Date.parse(event.timestamp)));
    const byDefault = await getJson(`${test.url}/memory/events?session_id=many`);
    assert.equal(byDefault.body.total, 100);
    assert.equal(byDefault.body.events.at(-1).content, "m1099");
    const most = await getJson(`${test.url}/memory/events?session_id=many&limit=5000`);
    assert.equal(most.body.events.length, 1000);
    const three = await getJson(`${test.url}/memory/events?session_id=many&limit=3`);
    assert.deepEqual(
      three.body.events.map((item: { content: string }) => item.content),
      ["m1097", "m1098", "m1099"],
    );
    const one = await getJson(`${test.url}/memory/events?session_id=many&limit=1`);
    assert.equal(one.body.total, 1);
    // No session: the latest events of every session, each naming its own.
    const latest = await getJson(`${test.url}/memory/events?limit=2`);
    assert.equal(latest.body.total, 2);
    for (const item of latest.body.events) assert.ok(["many", "few"].includes(item.metadata.session_id), JSON.stringify(item));
    const empty = await getJson(`${test.url}/memory/events?session_id=&limit=2`);
    assert.equal(empty.body.total, 2);
    const unknown = await getJson(`${test.url}/memory/events?session_id=nobody`);
    assert.deepEqual([unknown.status, unknown.body.events, unknown.body.total], [200, [], 0]);
  });

  it("refuses a limit that is not a positive integer, and a session_id given twice or invalid", async () => {
    for (const limit of ["0", "-1", "1.5", "abc", "", "1e3", " 5"]) {
      const refused = await getJson(`${test.url}/memory/events?limit=${encodeURIComponent(limit)}`);
      assert.equal(refused.status, 400, JSON.stringify(limit));
      assert.deepEqual(refused.body.error, { message: "limit must be a positive integer", type: "invalid_request_error", param: "limit", code: "invalid_limit" });
    }
    const twice = await getJson(`${test.url}/memory/events?session_id=a&session_id=b`);
    assert.equal(twice.status, 400);
    assert.equal(twice.body.error.code, "invalid_session_id");
  });

  it("GET /memory/sessions: the ids, least recently updated first, with their number", async () => {
    const { body } = await getJson(`${test.url}/memory/sessions`);
    assert.deepEqual(body, { agent: "remembers", sessions: ["many", "few"], total: 2 });
  });
});

describe("memory settings of the server", () => {
  it("MEMORY_ENABLED=false: the agent answers and nothing is recorded", async () => {
    const test = await startTestServer({ MEMORY_ENABLED: "false", DEBUG_MOCK_RESPONSES: script("Hi.") });
    try {
      const chat = await fetch(`${test.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "s1", messages: [{ role: "user", content: "hi" }] }) });
      assert.equal(chat.status, 200);
      assert.equal(((await chat.json()) as any).choices[0].message.content, "Hi.");
      assert.deepEqual((await getJson(`${test.url}/memory/events?session_id=s1`)).body.events, []);
    } finally {
      await test.close();
    }
  });

  it("memory: false (no store): the agent answers and nothing is recorded", async () => {
    const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("Hi.") }, { memory: false });
    try {
      const chat = await fetch(`${test.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "s2", messages: [{ role: "user", content: "hi" }] }) });
      assert.equal(chat.status, 200);
      await chat.text();
      assert.deepEqual((await getJson(`${test.url}/memory/sessions`)).body.sessions, []);
    } finally {
      await test.close();
    }
  });

  it("a store given to the server keeps the session, and MEMORY_CONTEXT_LIMIT bounds what the model is given of it", async () => {
    for (const [limit, expected] of [
      [undefined, 5],
      ["1", 3],
    ] as const) {
      const model = new ScriptedModel(["one", "two", "three"], { continueAcrossRuns: true });
      const store = new InMemoryStore();
      const test = await startTestServer(limit ? { MEMORY_CONTEXT_LIMIT: limit } : {}, { build: { model }, memory: store });
      try {
        for (const content of ["first", "second", "third"]) {
          const chat = await fetch(`${test.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "kept", messages: [{ role: "user", content }] }) });
          assert.equal(chat.status, 200);
          await chat.text();
        }
        // The third call: the earlier exchanges (2 questions, 2 answers) and the new question, or the last exchange and it.
        const last = model.requests.at(-1)!;
        assert.equal(last.messages.filter((message) => message.role !== "system").length, expected, `limit ${limit}: ${JSON.stringify(last.messages)}`);
        assert.ok((await store.events("kept", { limit: 100 })).length >= 6);
      } finally {
        await test.close();
      }
      // The caller's store: the server does not close it.
      assert.ok((await store.events("kept", { limit: 100 })).length >= 6);
    }
  });
});

describe("requests whose store fails", () => {
  class FailingStore extends InMemoryStore {
    constructor(private readonly failure: () => Error) {
      super();
    }
    override async listSessions(): Promise<never> {
      throw this.failure();
    }
  }

  it("a store failure is a 503 naming its kind (logged); anything else a 500 'internal error' (logged with its stack)", async () => {
    for (const [failure, status, code, logged] of [
      [() => new AgentLoopError("network", "the store is unreachable"), 503, "network", /GET \/memory\/sessions failed: network: the store is unreachable/],
      [() => new Error("a bug somewhere"), 500, "internal_error", /unexpected error on GET \/memory\/sessions: Error: a bug somewhere\n\s+at /],
    ] as const) {
      const test = await startTestServer({ AGENT_NAME: "fragile" }, { build: { model: new ScriptedModel(["ok"]) }, memory: new FailingStore(failure) });
      try {
        const answer = await getJson(`${test.url}/memory/sessions`);
        assert.equal(answer.status, status);
        assert.deepEqual(answer.body.error, { message: status === 500 ? "internal error" : "the store is unreachable", type: "server_error", param: null, code });
        const line = await test.waitForLog(logged);
        assert.ok(line.startsWith("[fragile] "), line);
      } finally {
        await test.close();
      }
    }
  });

  it("an empty or invalid JSON body is a 400 invalid_json saying which", async () => {
    const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("x") });
    try {
      for (const [body, message] of [
        ["", "the request body is empty; send a JSON object"],
        [" \n ", "the request body is empty; send a JSON object"],
        ["{nope", /^the request body is not valid JSON: /],
      ] as const) {
        const answer = await fetch(`${test.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
        assert.equal(answer.status, 400);
        const error = ((await answer.json()) as any).error;
        assert.equal(error.code, "invalid_json");
        if (typeof message === "string") assert.equal(error.message, message);
        else assert.match(error.message, message);
      }
    } finally {
      await test.close();
    }
  });
});

describe("the studio's assets", () => {
  let assets: string;
  let test: TestServer;
  const savedAssets = process.env.AGENTLOOP_STUDIO_ASSETS;
  before(async () => {
    assets = await mkdtemp(join(tmpdir(), "agentloop-studio-types-"));
    await mkdir(join(assets, "assets"));
    await writeFile(join(assets, "index.html"), "<!doctype html><title>s</title>");
    for (const name of ["app.js", "app.css", "logo.svg", "app.js.map", "font.woff2", "v1.2_x-y.js"]) await writeFile(join(assets, "assets", name), name);
    await writeFile(join(assets, ".hidden"), "secret");
    process.env.AGENTLOOP_STUDIO_ASSETS = assets;
    test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("x") });
  });
  after(async () => {
    await test.close();
    if (savedAssets === undefined) delete process.env.AGENTLOOP_STUDIO_ASSETS;
    else process.env.AGENTLOOP_STUDIO_ASSETS = savedAssets;
    await rm(assets, { recursive: true, force: true });
  });

  it("serves each asset with its type and the page's headers, at /studio and /studio/", async () => {
    for (const [path, type, body] of [
      ["/studio", "text/html; charset=utf-8", "<!doctype html><title>s</title>"],
      ["/studio/", "text/html; charset=utf-8", "<!doctype html><title>s</title>"],
      ["/studio/assets/app.js", "text/javascript; charset=utf-8", "app.js"],
      ["/studio/assets/v1.2_x-y.js", "text/javascript; charset=utf-8", "v1.2_x-y.js"],
      ["/studio/assets/app.css", "text/css; charset=utf-8", "app.css"],
      ["/studio/assets/logo.svg", "image/svg+xml", "logo.svg"],
      ["/studio/assets/app.js.map", "application/json", "app.js.map"],
      ["/studio/assets/font.woff2", "application/octet-stream", "font.woff2"],
    ] as const) {
      const response = await fetch(`${test.url}${path}`);
      assert.equal(response.status, 200, path);
      assert.equal(await response.text(), body);
      assert.equal(response.headers.get("content-type"), type, path);
      assert.equal(response.headers.get("content-security-policy"), "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
      assert.equal(response.headers.get("x-content-type-options"), "nosniff");
      assert.equal(response.headers.get("referrer-policy"), "no-referrer");
      assert.equal(response.headers.get("cache-control"), "no-cache");
    }
  });

  it("answers 404 naming the asset for one that is missing or whose name is not a plain file name", async () => {
    for (const name of ["missing.js", ".hidden", "a b.js", "x%2Fy.js"]) {
      const response = await fetch(`${test.url}/studio/assets/${name}`);
      assert.equal(response.status, 404, name);
      const error = ((await response.json()) as any).error;
      assert.equal(error.code, "unknown_route");
      assert.match(error.message, /^no studio asset /);
    }
  });
});

describe("GET /v1/agent: the model and the MCP servers' states", () => {
  it("a model named by the agent file; an MCP server connected", async () => {
    const folder = await mkdtemp(join(tmpdir(), "agentloop-agent-model-"));
    const file = join(folder, "agent.yaml");
    await writeFile(file, ["name: filed", "model: openai:gpt-test-mini", "mcpServers:", "  - name: everything", `    command: ${JSON.stringify(process.execPath)}`, `    args: [${JSON.stringify(everythingServerPath)}, stdio]`].join("\n"));
    const server = await startTestServer({ OPENAI_API_KEY: "sk-not-used" }, { agentFile: file, build: {} });
    try {
      await server.server.ready();
      const { body: info } = await getJson(`${server.url}/v1/agent`);
      assert.equal(info.settings.model, "openai:gpt-test-mini");
      assert.deepEqual(
        info.mcpServers.map((entry: { name: string; transport: string; state: string; args: string[] }) => [entry.name, entry.transport, entry.state, entry.args.at(-1)]),
        [["everything", "stdio", "connected", "stdio"]],
      );
      assert.equal(info.mcpServers[0].reason, undefined);
      assert.ok(info.tools.some((tool: { name: string }) => tool.name === "echo"));
    } finally {
      await server.close();
      await rm(folder, { recursive: true, force: true });
    }
  });
});

// The public routes the studio reads (docs/server.md), through AgentServer.fetch: sessions and
// their events by position, pending approvals across sessions, the agent with its secrets
// redacted, steering and abort of a running run, and the page itself (CSP, off, not built).
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { InMemoryStore } from "../../src/memory/index.js";
import type { Tool } from "../../src/tools/tool.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";
import { studioRoutes } from "../../src/server/routes/studio.js";

const calls = (...list: Array<{ id: string; name: string; arguments: Record<string, unknown> }>) => JSON.stringify({ tool_calls: list });

let assets: string;
before(async () => {
  assets = await mkdtemp(join(tmpdir(), "agentloop-studio-assets-"));
  await writeFile(join(assets, "index.html"), "<!doctype html><title>studio</title>");
});
after(() => rm(assets, { recursive: true, force: true }));

const writeNote: Tool = { name: "write_note", description: "Writes a note", parameters: { type: "object", properties: { text: { type: "string" } } }, execute: () => "written" };

async function server(env: Record<string, string>, store = new InMemoryStore({ maxEventsPerSession: 20_000 })): Promise<AgentServer> {
  const created = await createAgentServer({ env: { AGENT_NAME: "routes-agent", ...env }, file: { approvals: { tools: ["write_note"] } }, build: { tools: [writeNote] }, memory: store, log: () => {} });
  await created.ready();
  return created;
}

const get = async (agent: AgentServer, path: string, headers: Record<string, string> = {}) => agent.fetch(new Request(`http://local${path}`, { headers }));
const post = async (agent: AgentServer, path: string, body: unknown) =>
  agent.fetch(new Request(`http://local${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));

describe("the studio's routes", () => {
  it("GET /v1/sessions lists sessions newest first with counts; /v1/sessions/{id}/events pages by seq and follows with after_seq", async () => {
    const store = new InMemoryStore({ maxEventsPerSession: 20_000 });
    await store.append("old", [{ event_type: "user_message", content: "a" }]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.append("new", Array.from({ length: 2500 }, (_, index) => ({ event_type: "user_message", content: `m${index}` })));
    const agent = await server({ DEBUG_MOCK_RESPONSES: '["x"]' }, store);
    try {
      const sessions = (await (await get(agent, "/v1/sessions")).json()) as { sessions: Array<{ session_id: string; event_count: number; last_seq: number }> };
      assert.deepEqual(
        sessions.sessions.map((session) => [session.session_id, session.event_count]),
        [
          ["new", 2500],
          ["old", 1],
        ],
      );
      const first = (await (await get(agent, "/v1/sessions/new/events?after_seq=0&limit=2000")).json()) as { events: Array<{ seq: number; content: string }>; last_seq: number };
      assert.equal(first.events.length, 2000);
      assert.equal(first.events[0].seq, 1);
      assert.equal(first.last_seq, 2000);
      const rest = (await (await get(agent, `/v1/sessions/new/events?after_seq=${first.last_seq}&limit=2000`)).json()) as { events: Array<{ seq: number }>; last_seq: number };
      assert.deepEqual([rest.events.length, rest.events[0].seq, rest.last_seq], [500, 2001, 2500]);
      const none = (await (await get(agent, "/v1/sessions/new/events?after_seq=2500")).json()) as { events: unknown[]; last_seq: number };
      assert.deepEqual([none.events.length, none.last_seq], [0, 2500], "nothing new: the same position");
      const latest = (await (await get(agent, "/v1/sessions/new/events?limit=3")).json()) as { events: Array<{ seq: number }> };
      assert.deepEqual(
        latest.events.map((event) => event.seq),
        [2498, 2499, 2500],
        "without after_seq: the last ones",
      );
      const unknown = (await (await get(agent, "/v1/sessions/nobody/events")).json()) as { events: unknown[] };
      assert.equal(unknown.events.length, 0);
      for (const [query, code] of [
        ["after_seq=-1", "invalid_after_seq"],
        ["after_seq=x", "invalid_after_seq"],
        ["limit=0", "invalid_limit"],
      ]) {
        const refused = await get(agent, `/v1/sessions/new/events?${query}`);
        assert.equal(refused.status, 400, query);
        assert.equal(((await refused.json()) as { error: { code: string } }).error.code, code);
      }
      const badId = await get(agent, "/v1/sessions/-bad!/events");
      assert.equal(badId.status, 400);
    } finally {
      await agent.close();
    }
  });

  it("GET /v1/approvals lists every pending call across sessions until it is decided", async () => {
    const agent = await server({ DEBUG_MOCK_RESPONSES: JSON.stringify([calls({ id: "w1", name: "write_note", arguments: { text: "hi" } }), "written"]) });
    try {
      for (const sessionId of ["s-a", "s-b"]) {
        const response = await post(agent, "/v1/chat/completions", { session_id: sessionId, messages: [{ role: "user", content: "note it" }] });
        assert.equal(((await response.json()) as { choices: Array<{ finish_reason: string }> }).choices[0].finish_reason, "approval_required");
      }
      const pending = (await (await get(agent, "/v1/approvals")).json()) as { pending: Array<{ session_id: string; tool: string; arguments: unknown; arguments_hash: string; agent_path: string[] }>; total: number };
      assert.equal(pending.total, 2);
      assert.deepEqual(pending.pending.map((entry) => entry.session_id).sort(), ["s-a", "s-b"]);
      assert.deepEqual(pending.pending[0].arguments, { text: "hi" });
      assert.deepEqual(pending.pending[0].agent_path, ["routes-agent"]);
      const entry = pending.pending.find((item) => item.session_id === "s-a")!;
      const decided = await post(agent, "/v1/approvals", { session_id: "s-a", stream: false, decisions: { w1: { approve: false, reason: "no", arguments_hash: entry.arguments_hash } } });
      assert.equal(decided.status, 200);
      const after = (await (await get(agent, "/v1/approvals")).json()) as { pending: Array<{ session_id: string }> };
      assert.deepEqual(
        after.pending.map((item) => item.session_id),
        ["s-b"],
      );
    } finally {
      await agent.close();
    }
  });

  it("GET /v1/agent shows tools, MCP servers and settings with every secret redacted", async () => {
    const folder = await mkdtemp(join(tmpdir(), "agentloop-studio-agent-"));
    const file = join(folder, "agent.yaml");
    await writeFile(
      file,
      [
        "name: secretive",
        "mcpServers:",
        "  - name: remote",
        "    url: http://user:hunter2@127.0.0.1:9/mcp",
        "    auth: { clientId: my-client, clientSecret: s3cret }",
        "  - name: local",
        "    command: node",
        "    args: [server.js]",
        "    env: { TOKEN: tok-123 }",
        "memory:",
        "  type: memory",
      ].join("\n"),
    );
    const agent = await createAgentServer({ agentFile: file, env: { DEBUG_MOCK_RESPONSES: '["x"]', AGENT_API_KEY: "key-456" }, readyTimeoutMs: 200, log: () => {} });
    try {
      assert.equal((await get(agent, "/v1/agent")).status, 401);
      const response = await get(agent, "/v1/agent", { authorization: "Bearer key-456" });
      const text = await response.text();
      for (const secret of ["hunter2", "s3cret", "tok-123", "key-456"]) assert.ok(!text.includes(secret), `${secret} never leaves`);
      const info = JSON.parse(text) as { name: string; mcpServers: Array<{ name: string; state: string; url?: string; auth?: { clientId: string } }>; settings: { apiKey: string } };
      assert.equal(info.name, "secretive");
      assert.equal(info.settings.apiKey, "[redacted]");
      const remote = info.mcpServers.find((entry) => entry.name === "remote")!;
      assert.equal(remote.state, "down", "nothing listens on port 9");
      assert.match(remote.url ?? "", /^http:\/\/user:\[redacted\]@127\.0\.0\.1:9\/mcp$/);
      assert.equal(remote.auth?.clientId, "my-client");
    } finally {
      await agent.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("POST /v1/sessions/{id}/steer and /abort reach the run going on; 404 when none runs, 400 for a bad body", async () => {
    // A tool that waits until released (or aborted): the run goes on while the test steers it.
    let release: () => void = () => {};
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    const wait: Tool = {
      name: "wait",
      description: "Waits",
      parameters: { type: "object", properties: {} },
      execute: (_args, context) =>
        new Promise<string>((resolve) => {
          started();
          release = () => resolve("released");
          context.signal.addEventListener("abort", () => resolve("aborted"), { once: true });
        }),
    };
    const agent = await createAgentServer({
      env: { AGENT_NAME: "routes-agent", DEBUG_MOCK_RESPONSES: JSON.stringify([calls({ id: "w", name: "wait", arguments: {} }), "after the wait"]) },
      build: { tools: [wait] },
      memory: new InMemoryStore(),
      log: () => {},
    });
    try {
      assert.equal((await post(agent, "/v1/sessions/idle/steer", { message: "hi" })).status, 404);
      assert.equal(((await (await post(agent, "/v1/sessions/idle/abort", {})).json()) as { error: { code: string } }).error.code, "no_running_run");
      assert.equal((await post(agent, "/v1/sessions/idle/steer", { message: "" })).status, 400);
      // Steering: read by the run before its next model call.
      const steered = post(agent, "/v1/chat/completions", { session_id: "busy", messages: [{ role: "user", content: "wait" }] });
      await running;
      const steer = await post(agent, "/v1/sessions/busy/steer", { message: "be brief" });
      assert.equal(steer.status, 200);
      release();
      assert.equal((await steered).status, 200);
      const log = (await (await get(agent, "/v1/sessions/busy/events")).json()) as { events: Array<{ event_type: string; content: unknown }> };
      assert.ok(log.events.some((event) => event.event_type === "steering" && event.content === "be brief"));
      // Abort: the run ends ABORTED.
      const second = new Promise<void>((resolve) => (started = resolve));
      const aborted = post(agent, "/v1/chat/completions", { session_id: "busy2", messages: [{ role: "user", content: "wait" }] });
      await second;
      assert.equal((await post(agent, "/v1/sessions/busy2/abort", {})).status, 200);
      assert.equal((await aborted).status, 503, "the chat ended aborted");
      const ended = (await (await get(agent, "/v1/sessions/busy2/events")).json()) as { events: Array<{ event_type: string; content: { state?: string } }> };
      assert.equal(ended.events.find((event) => event.event_type === "run_ended")?.content.state, "ABORTED");
    } finally {
      await agent.close();
    }
  });

  it("serves the page with its CSP; 404 when the studio is off; 503 naming the build when it is not built", async () => {
    const on = await server({ DEBUG_MOCK_RESPONSES: '["x"]', AGENT_API_KEY: "k" });
    const off = await server({ DEBUG_MOCK_RESPONSES: '["x"]', AGENT_STUDIO: "false" });
    try {
      const context = { settings: on.settings } as Parameters<typeof studioRoutes>[0];
      const page = await studioRoutes(context, assets).fetch(new Request("http://local/studio"));
      assert.equal(page.status, 200, "the page needs no key: it holds no data");
      assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'none'; script-src 'self'; style-src 'self'/);
      assert.equal((await studioRoutes(context, assets).fetch(new Request("http://local/studio/assets/..%2Fsecret"))).status, 404);
      const missing = await studioRoutes(context, join(assets, "nothing")).fetch(new Request("http://local/studio"));
      assert.equal(missing.status, 503);
      assert.match(((await missing.json()) as { error: { message: string } }).error.message, /not built.*npm run build/);
      const disabled = await get(off, "/studio");
      assert.equal(disabled.status, 404);
      assert.match(((await disabled.json()) as { error: { message: string } }).error.message, /AGENT_STUDIO=false/);
    } finally {
      await on.close();
      await off.close();
    }
  });
});

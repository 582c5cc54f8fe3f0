// The session routes a viewer pages through (src/server/routes/sessions.ts), at their edges: the
// limits and their defaults, positions of an empty page, the refusals with their messages, and what
// steering and aborting a run answer.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { defineTool } from "../../src/index.js";
import { InMemoryStore } from "../../src/memory/index.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

describe("GET /v1/sessions and /v1/sessions/{id}/events at their edges", () => {
  let agent: AgentServer;
  before(async () => {
    const store = new InMemoryStore({ maxEventsPerSession: 20_000 });
    await store.append("first", [{ event_type: "user_message", content: "a" }]);
    await store.append("second", [{ event_type: "user_message", content: "b" }]);
    await store.append("long", Array.from({ length: 10_050 }, (_, index) => ({ event_type: "user_message", content: `m${index}` })));
    agent = await createAgentServer({ env: { AGENT_NAME: "pager", DEBUG_MOCK_RESPONSES: '["x"]' }, memory: store, log: () => {} });
  });
  after(() => agent.close());

  const get = (path: string) => agent.fetch(new Request(`http://agent${path}`));
  const json = async <T>(path: string): Promise<T> => {
    const response = await get(path);
    assert.equal(response.status, 200, path);
    return (await response.json()) as T;
  };

  it("lists the sessions newest first with their counts; limit keeps the newest ones", async () => {
    type Listing = { sessions: Array<{ session_id: string; event_count: number; last_seq: number; created_at: string; updated_at: string }>; total: number };
    const all = await json<Listing>("/v1/sessions");
    assert.deepEqual(
      all.sessions.map((session) => [session.session_id, session.event_count, session.last_seq]),
      [
        ["long", 10_050, 10_050],
        ["second", 1, 1],
        ["first", 1, 1],
      ],
    );
    assert.equal(all.total, 3);
    assert.deepEqual(Object.keys(all.sessions[0]).sort(), ["created_at", "event_count", "last_seq", "session_id", "updated_at"]);
    const two = await json<Listing>("/v1/sessions?limit=2");
    assert.deepEqual(
      two.sessions.map((session) => session.session_id),
      ["long", "second"],
    );
    assert.equal(two.total, 2);
    assert.equal((await json<Listing>("/v1/sessions?limit=")).total, 3, "an empty limit is no limit");
  });

  it("pages events: 1000 by default, at most 10000, after a position or the last ones", async () => {
    type Page = { session_id: string; events: Array<{ seq: number }>; last_seq: number };
    const first = await json<Page>("/v1/sessions/long/events?after_seq=0");
    assert.equal(first.session_id, "long");
    assert.equal(first.events.length, 1000);
    assert.deepEqual([first.events[0].seq, first.last_seq], [1, 1000]);
    const capped = await json<Page>("/v1/sessions/long/events?after_seq=0&limit=20000");
    assert.equal(capped.events.length, 10_000);
    assert.equal(capped.last_seq, 10_000);
    const last = await json<Page>("/v1/sessions/long/events");
    assert.deepEqual([last.events.length, last.events[0].seq, last.last_seq], [1000, 9051, 10_050]);
    const one = await json<Page>("/v1/sessions/long/events?limit=1&after_seq=");
    assert.deepEqual(
      one.events.map((event) => event.seq),
      [10_050],
      "an empty after_seq is none",
    );
  });

  it("an empty page keeps the position asked for (0 without one)", async () => {
    type Page = { events: unknown[]; last_seq: number };
    assert.deepEqual(await json<Page>("/v1/sessions/nobody/events"), { session_id: "nobody", events: [], last_seq: 0 });
    assert.deepEqual(await json<Page>("/v1/sessions/nobody/events?after_seq=7"), { session_id: "nobody", events: [], last_seq: 7 });
  });

  it("refuses a limit or position that is not a whole number in range, naming it and what it got", async () => {
    for (const [path, param, minimum, got] of [
      ["/v1/sessions?limit=0", "limit", 1, "0"],
      ["/v1/sessions?limit=two", "limit", 1, "two"],
      ["/v1/sessions?limit=1.5", "limit", 1, "1.5"],
      ["/v1/sessions?limit=-3", "limit", 1, "-3"],
      ["/v1/sessions/long/events?limit=0", "limit", 1, "0"],
      ["/v1/sessions/long/events?limit=5x", "limit", 1, "5x"],
      ["/v1/sessions/long/events?after_seq=-1", "after_seq", 0, "-1"],
      ["/v1/sessions/long/events?after_seq=1e3", "after_seq", 0, "1e3"],
      ["/v1/sessions/long/events?after_seq=%201", "after_seq", 0, " 1"],
    ] as const) {
      const response = await get(path);
      assert.equal(response.status, 400, path);
      const body = (await response.json()) as ErrorBody;
      assert.deepEqual([body.error.param, body.error.code, body.error.type], [param, `invalid_${param}`, "invalid_request_error"], path);
      assert.equal(body.error.message, `${param} must be an integer of at least ${minimum}, got "${got}"`);
    }
  });

  it("GET /memory/events: session_id absent or empty is every session; given twice, a 400 naming how often", async () => {
    type Listing = { events: Array<{ content: unknown }>; total: number };
    // Every session's latest events: the newest are the long session's last ones.
    assert.deepEqual((await json<Listing>("/memory/events?limit=2")).events.map((event) => event.content), ["m10048", "m10049"]);
    assert.deepEqual((await json<Listing>("/memory/events?session_id=&limit=2")).events.map((event) => event.content), ["m10048", "m10049"]);
    assert.deepEqual((await json<Listing>("/memory/events?session_id=first")).events.map((event) => event.content), ["a"]);
    const twice = await get("/memory/events?session_id=first&session_id=second");
    assert.equal(twice.status, 400);
    const { error } = (await twice.json()) as ErrorBody;
    assert.deepEqual([error.param, error.code, error.message], ["session_id", "invalid_session_id", "session_id must be given once, got 2 values"]);
  });

  it("refuses a session id that is not one, naming the parameter", async () => {
    for (const id of ["-dash-first", "a%20b", "x".repeat(201), "semi;colon"]) {
      const response = await get(`/v1/sessions/${id}/events`);
      assert.equal(response.status, 400, id);
      const body = (await response.json()) as ErrorBody;
      assert.deepEqual([body.error.param, body.error.code], ["session_id", "invalid_session_id"]);
      assert.match(body.error.message, /^session_id must be 1-200 characters of letters, digits/);
    }
    // The longest id accepted, and every character the alphabet allows.
    assert.equal((await get(`/v1/sessions/${"x".repeat(200)}/events`)).status, 200);
    assert.equal((await get("/v1/sessions/A9_.:@-z/events")).status, 200);
  });
});

describe("POST /v1/sessions/{id}/steer and /abort answer what they did", () => {
  let release: () => void = () => undefined;
  let started: () => void = () => undefined;
  const wait = defineTool({
    name: "wait",
    description: "Waits until released or aborted",
    parameters: { type: "object" },
    execute: (_args, context) =>
      new Promise<string>((resolve) => {
        release = () => resolve("released");
        context.signal.addEventListener("abort", () => resolve("aborted"), { once: true });
        started();
      }),
  });
  const calls = JSON.stringify({ tool_calls: [{ id: "w", name: "wait", arguments: {} }] });
  let agent: AgentServer;
  before(async () => {
    agent = await createAgentServer({
      env: { AGENT_NAME: "steered", DEBUG_MOCK_RESPONSES: JSON.stringify([calls, "after the wait", calls, "never"]) },
      build: { tools: [wait] },
      memory: new InMemoryStore(),
      log: () => {},
    });
  });
  after(() => agent.close());
  const post = (path: string, body: unknown) =>
    agent.fetch(new Request(`http://agent${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) }));

  it("refuses a body without a message, a blank one, or no JSON, before looking for the run", async () => {
    for (const body of [{}, { message: "   " }, { message: 3 }, "null", "[]"]) {
      const response = await post("/v1/sessions/idle/steer", body);
      assert.equal(response.status, 400, JSON.stringify(body));
      const error = ((await response.json()) as ErrorBody).error;
      assert.deepEqual([error.param, error.code], ["message", "invalid_message"]);
      assert.match(error.message, /"message": "<text for the running run>"/);
    }
    const broken = await post("/v1/sessions/idle/steer", "{not json");
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as ErrorBody).error.code, "invalid_json");
  });

  it("answers 404 naming the session when no run goes on in it", async () => {
    for (const path of ["/v1/sessions/idle/steer", "/v1/sessions/idle/abort"]) {
      const response = await post(path, { message: "hi" });
      assert.equal(response.status, 404, path);
      const error = ((await response.json()) as ErrorBody).error;
      assert.deepEqual([error.code, error.type], ["no_running_run", "not_found_error"]);
      assert.equal(error.message, 'no run is going on in session "idle" on this server');
    }
  });

  it("steering and aborting name the session and the run", async () => {
    let running = new Promise<void>((resolve) => (started = resolve));
    const chat = post("/v1/chat/completions", { session_id: "busy", messages: [{ role: "user", content: "wait" }] });
    await running;
    const steer = await post("/v1/sessions/busy/steer", { message: "be brief" });
    const steered = (await steer.json()) as { session_id: string; run_id: string; steered: boolean };
    assert.equal(steered.session_id, "busy");
    assert.equal(steered.steered, true);
    assert.match(steered.run_id, /\S/);
    release();
    assert.equal((await chat).status, 200);

    running = new Promise<void>((resolve) => (started = resolve));
    const doomed = post("/v1/chat/completions", { session_id: "busy", messages: [{ role: "user", content: "wait again" }] });
    await running;
    const abort = await post("/v1/sessions/busy/abort", {});
    const aborted = (await abort.json()) as { session_id: string; run_id: string; aborted: boolean };
    assert.deepEqual([aborted.session_id, aborted.aborted], ["busy", true]);
    assert.notEqual(aborted.run_id, steered.run_id, "each request is its own run");
    const ended = await doomed;
    assert.equal(ended.status, 503);
    assert.match(((await ended.json()) as ErrorBody).error.message, /aborted from the studio/);
  });
});

// Issue 27, item 7 and its class: every route that takes a session id (in a body, a header, a query
// or an A2A contextId) refuses a hostile one with a 400 naming where it came from, through real HTTP
// (and AgentServer.fetch for the chat route's web-standard twin). Never a 5xx, and nothing stored.
// The same for the other ids a client names: a run id (the run routes) and an executor id (recovery).
import assert from "node:assert/strict";
import { request } from "node:http";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { InMemoryStore } from "../../src/memory/index.js";
import { startTestServer, type TestServer } from "./helpers.js";
import { registeredRoutes } from "./registered-routes.js";

interface Answer {
  status: number;
  text: string;
}

/** One hostile session id (a header or a query carries it as `headerText` and `queryOf` say). */
interface HostileCase {
  name: string;
  value: unknown;
}

const CASES: HostileCase[] = [
  { name: "a lone surrogate", value: "ab\ud800cd" },
  { name: "a NUL character", value: "ab\u0000cd" },
  { name: "too long (201 characters)", value: "a".repeat(201) },
  { name: "a path traversal", value: "../../etc/passwd" },
  { name: "empty", value: "" },
  { name: "not a string", value: 42 },
];

/** What a route answers for one case. */
type Expected =
  | { kind: "refused" }
  /** The value means "no session id" there (an empty header, query or A2A contextId): the route's usual answer. */
  | { kind: "absent"; status: number }
  /** It cannot reach the server: node's HTTP parser refuses the request (a NUL in a header) with its own 400. */
  | { kind: "parser" }
  /** The client cannot send it at all (a NUL in a fetch Headers value): nothing to check. */
  | { kind: "unsendable" };

interface Route {
  name: string;
  /** The parameter the 400 names (`param`). */
  param: string;
  /** A2A answers JSON-RPC: the problem is in `error.data`. */
  jsonRpc?: boolean;
  send(test: TestServer, value: unknown): Promise<Answer>;
  expected(hostile: HostileCase): Expected;
}

/** A request over node:http; a header value given as a list is sent as that many header lines. */
function httpRequest(url: string, method: string, path: string, headers: Record<string, string | string[]>, body?: string): Promise<Answer> {
  const target = new URL(path, url);
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: target.hostname, port: target.port, path, method, agent: false });
    for (const [name, value] of Object.entries(headers)) outgoing.setHeader(name, value);
    outgoing.on("response", (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (part: string) => (text += part));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/** A request written byte for byte on a socket (for what node's client refuses to send): its status. */
function rawRequest(url: string, head: string, body: string): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (part: string) => (text += part));
    socket.on("end", () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }));
    socket.on("error", reject);
    socket.end(Buffer.from(`${head}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`, "latin1"));
  });
}

const json = { "content-type": "application/json" };
const chatBody = (extra: object = {}) => JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...extra });
/** A session id as a header carries it: a lone surrogate as the bytes of its UTF-8 form (what a client writing it raw sends). */
const headerText = (value: string) => (value.isWellFormed() ? value : Buffer.from(value, "utf8").toString("latin1"));
/** A session id in a query string: the lone surrogate percent-encoded as its UTF-8 form's bytes, `%ED%A0%80`. */
const queryOf = (value: unknown): string =>
  typeof value !== "string"
    ? // Not one string: the parameter given twice.
      "session_id=first&session_id=..%2Fsecond"
    : value.isWellFormed()
      ? `session_id=${encodeURIComponent(value)}`
      : `session_id=${value.replace(/[\ud800-\udfff]/g, "%ED%A0%80").replace(/[^%A-Za-z0-9]/g, (char) => encodeURIComponent(char))}`;

/** X-Session-ID on the chat route: a NUL cannot be sent by a conforming client; not a string is the header given twice. */
function headerRoute(name: string, via: "http" | "fetch"): Route {
  return {
    name,
    param: "X-Session-ID",
    async send(test, value) {
      if (via === "fetch") {
        const headers = new Headers(json);
        if (typeof value === "string") headers.set("x-session-id", headerText(value));
        else for (const each of ["first", "second"]) headers.append("x-session-id", each);
        const response = await test.server.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers, body: chatBody() }));
        return { status: response.status, text: await response.text() };
      }
      if (typeof value === "string" && value.includes("\u0000")) {
        return rawRequest(test.url, `POST /v1/chat/completions HTTP/1.1\r\nhost: agent\r\ncontent-type: application/json\r\nx-session-id: ${value}\r\n`, chatBody());
      }
      const header = typeof value === "string" ? headerText(value) : ["first", "second"];
      return httpRequest(test.url, "POST", "/v1/chat/completions", { ...json, "x-session-id": header }, chatBody());
    },
    expected(hostile) {
      if (hostile.value === "") return { kind: "absent", status: 200 };
      if (hostile.name === "a NUL character") return via === "http" ? { kind: "parser" } : { kind: "unsendable" };
      return { kind: "refused" };
    },
  };
}

function queryRoute(path: string, absentStatus: number): Route {
  return {
    name: `GET ${path}?session_id=`,
    param: "session_id",
    send: (test, value) => httpRequest(test.url, "GET", `${path}?${queryOf(value)}`, {}),
    expected: (hostile) => (hostile.value === "" ? { kind: "absent", status: absentStatus } : { kind: "refused" }),
  };
}

function a2aRoute(path: string, where: "params.message.contextId" | "params.contextId"): Route {
  return {
    name: `POST ${path} ${where}`,
    param: where,
    jsonRpc: true,
    send(test, contextId) {
      const message = { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "hi" }], ...(where === "params.message.contextId" ? { contextId } : {}) };
      const params = where === "params.contextId" ? { message, contextId } : { message };
      return httpRequest(test.url, "POST", path, json, JSON.stringify({ jsonrpc: "2.0", id: 7, method: "message/send", params }));
    },
    // An empty contextId is none: the A2A SDK makes one.
    expected: (hostile) => (hostile.value === "" ? { kind: "absent", status: 200 } : { kind: "refused" }),
  };
}

const ROUTES: Route[] = [
  {
    name: "POST /v1/chat/completions session_id (node:http)",
    param: "session_id",
    send: (test, value) => httpRequest(test.url, "POST", "/v1/chat/completions", json, chatBody({ session_id: value })),
    expected: () => ({ kind: "refused" }),
  },
  {
    name: "POST /v1/chat/completions session_id (AgentServer.fetch)",
    param: "session_id",
    async send(test, value) {
      const response = await test.server.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers: json, body: chatBody({ session_id: value }) }));
      return { status: response.status, text: await response.text() };
    },
    expected: () => ({ kind: "refused" }),
  },
  headerRoute("POST /v1/chat/completions X-Session-ID (node:http)", "http"),
  headerRoute("POST /v1/chat/completions X-Session-ID (AgentServer.fetch)", "fetch"),
  {
    name: "POST /v1/approvals session_id",
    param: "session_id",
    send: (test, value) => httpRequest(test.url, "POST", "/v1/approvals", json, JSON.stringify({ session_id: value, decisions: { call_a: { approve: true } } })),
    expected: () => ({ kind: "refused" }),
  },
  queryRoute("/memory/events", 200),
  // Durable runs are off on this server: a valid (or no) session id gets the 404 saying so.
  queryRoute("/v1/runs", 404),
  {
    name: "POST /api/chat id",
    param: "id",
    send: (test, value) =>
      httpRequest(test.url, "POST", "/api/chat", json, JSON.stringify({ id: value, trigger: "submit-message", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] })),
    expected: () => ({ kind: "refused" }),
  },
  {
    name: "POST /ag-ui threadId",
    param: "threadId",
    send: (test, value) =>
      httpRequest(test.url, "POST", "/ag-ui", json, JSON.stringify({ threadId: value, runId: "r1", state: {}, tools: [], context: [], forwardedProps: {}, messages: [{ id: "m1", role: "user", content: "hi" }] })),
    expected: () => ({ kind: "refused" }),
  },
  a2aRoute("/a2a", "params.message.contextId"),
  a2aRoute("/a2a", "params.contextId"),
  a2aRoute("/a2a/", "params.message.contextId"),
  a2aRoute("/", "params.message.contextId"),
];

/** The routes that take no session id, and what they take instead: with ROUTES, every route the server registers. */
const WITHOUT_SESSION_ID: Record<string, string> = {
  "GET /health": "nothing",
  "GET /ready": "nothing",
  "GET /v1/models": "nothing",
  "GET /.well-known/agent": "nothing",
  "GET /.well-known/agent.json": "nothing",
  "GET /.well-known/agent-card.json": "nothing",
  "GET /memory/sessions": "nothing (it lists the session ids)",
  "GET /v1/runs/:run_id": "a run id (RUN_PATHS below)",
  "GET /v1/runs/:run_id/events": "a run id (RUN_PATHS below)",
  "POST /v1/runs/:run_id/cancel": "a run id (RUN_PATHS below)",
  "POST /v1/runs/:run_id/resume": "a run id (RUN_PATHS below)",
  "POST /v1/runs/recover": "executor ids (EXECUTOR_IDS below)",
  "GET /api/chat/:id/stream": "a session id in the path (SESSION_PATHS below)",
  "GET /v1/sessions": "nothing (it lists the sessions)",
  "GET /v1/sessions/:session_id/events": "a session id in the path (SESSION_PATHS below)",
  "POST /v1/sessions/:session_id/steer": "a session id in the path (SESSION_PATHS below)",
  "POST /v1/sessions/:session_id/abort": "a session id in the path (SESSION_PATHS below)",
  "GET /v1/approvals": "nothing (it lists the pending approvals of every session)",
  "GET /v1/agent": "nothing",
  "GET /studio": "nothing (the studio page)",
  "GET /studio/": "nothing (the studio page)",
  "GET /studio/assets/:name": "an asset's name (test/studio/routes.test.ts)",
};

/** `METHOD /path` of a row of ROUTES (its name starts with it; a query is not part of the path). */
const routeOf = (route: Route) => route.name.split(" ").slice(0, 2).join(" ").replace(/\?.*$/, "");

describe("a hostile id (session, run, executor), on every route that takes one", () => {
  let test: TestServer;
  const store = new InMemoryStore();
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "ids", DEBUG_MOCK_RESPONSES: JSON.stringify(Array(50).fill("ok")) }, { memory: store });
  });
  after(async () => {
    await test.close();
    await store.close();
  });

  it("covers every route the server registers: each takes a session id (a row of ROUTES) or is listed as taking none", () => {
    const covered = new Set([...ROUTES.map(routeOf), ...Object.keys(WITHOUT_SESSION_ID)]);
    assert.deepEqual(
      registeredRoutes().filter((route) => !covered.has(route)),
      [],
      "a route with no row: add it to ROUTES (it takes a session id) or to WITHOUT_SESSION_ID",
    );
    assert.deepEqual(
      [...covered].filter((route) => !registeredRoutes().includes(route)),
      [],
      "a row for a route the server does not register",
    );
  });

  for (const route of ROUTES) {
    for (const hostile of CASES) {
      const expected = route.expected(hostile);
      const title =
        expected.kind === "refused"
          ? `${route.name}: ${hostile.name} gets a 400 naming ${route.param}, and nothing is stored`
          : expected.kind === "absent"
            ? `${route.name}: ${hostile.name} is no session id there (${expected.status})`
            : `${route.name}: ${hostile.name} ${expected.kind === "parser" ? "is refused by node's HTTP parser (400)" : "cannot be sent by the client"}`;
      it(title, { skip: expected.kind === "unsendable" ? "fetch's Headers refuse a NUL before anything is sent" : false }, async () => {
        const sessionsBefore = (await store.listSessions()).map((session) => session.session_id);
        const answer = await route.send(test, hostile.value);
        assert.ok(answer.status < 500, `no 5xx: ${answer.status} ${answer.text}`);
        if (expected.kind === "absent") return assert.equal(answer.status, expected.status, answer.text);
        assert.equal(answer.status, 400, answer.text);
        if (expected.kind === "parser") return;
        const body = JSON.parse(answer.text);
        const problem = route.jsonRpc ? body.error.data : body.error;
        if (route.jsonRpc) {
          assert.equal(body.error.code, -32602);
          assert.equal(body.id, 7);
        }
        assert.equal(problem.code, "invalid_session_id");
        assert.equal(problem.param, route.param);
        assert.match(problem.message, new RegExp(`^${route.param.replaceAll(".", "\\.")} must be (1-200 characters|given once)`));
        assert.deepEqual(
          (await store.listSessions()).map((session) => session.session_id),
          sessionsBefore,
          "a refused request stores no session",
        );
      });
    }
  }

  // A run id in the path: checked before whether durable runs are on (this server has them off).
  const RUN_PATHS: Array<[string, (id: string) => string]> = [
    ["GET", (id) => `/v1/runs/${id}`],
    ["GET", (id) => `/v1/runs/${id}/events`],
    ["POST", (id) => `/v1/runs/${id}/cancel`],
    ["POST", (id) => `/v1/runs/${id}/resume`],
  ];
  const RUN_IDS: Array<[string, string]> = [
    ["a lone surrogate", "run_%ED%A0%80"],
    ["a NUL character", "run_a%00b"],
    ["too long (201 characters)", "r".repeat(201)],
    ["a path traversal", "..%2F..%2Fetc%2Fpasswd"],
  ];
  it("RUN_PATHS lists every route that takes a run id", () => {
    assert.deepEqual(
      RUN_PATHS.map(([method, pathOf]) => `${method} ${pathOf(":run_id")}`).sort(),
      registeredRoutes().filter((route) => route.includes(":run_id")),
    );
  });

  for (const [method, pathOf] of RUN_PATHS) {
    for (const [name, id] of RUN_IDS) {
      it(`${method} ${pathOf("{run_id}")}: ${name} as the run id gets a 400 naming run_id`, async () => {
        const answer = await httpRequest(test.url, method, pathOf(id), {});
        assert.equal(answer.status, 400, answer.text);
        const { error } = JSON.parse(answer.text);
        assert.equal(error.code, "invalid_run_id");
        assert.equal(error.param, "run_id");
        assert.match(error.message, /^run_id must be 1-200 letters, digits or _\.:-/);
      });
    }
  }

  // A session id in the path (the UI stream's resume, the studio's session routes): the same 400 as in a body.
  const SESSION_PATHS: Array<[method: string, path: (id: string) => string, param: string]> = [
    ["GET", (id) => `/api/chat/${id}/stream`, "id"],
    ["GET", (id) => `/v1/sessions/${id}/events`, "session_id"],
    ["POST", (id) => `/v1/sessions/${id}/steer`, "session_id"],
    ["POST", (id) => `/v1/sessions/${id}/abort`, "session_id"],
  ];
  const PATH_SESSION_IDS: Array<[string, string]> = [
    ["a lone surrogate", "ab%ED%A0%80cd"],
    ["a NUL character", "ab%00cd"],
    ["too long (201 characters)", "s".repeat(201)],
    ["a path traversal", "..%2F..%2Fetc%2Fpasswd"],
  ];
  it("SESSION_PATHS lists every route that takes a session id in its path", () => {
    assert.deepEqual(
      SESSION_PATHS.map(([method, pathOf]) => `${method} ${pathOf(":id")}`).sort(),
      registeredRoutes()
        .filter((route) => /:(session_)?id\b/.test(route))
        .map((route) => route.replace(":session_id", ":id"))
        .sort(),
    );
  });
  for (const [method, pathOf, param] of SESSION_PATHS) {
    for (const [name, id] of PATH_SESSION_IDS) {
      it(`${method} ${pathOf("{id}")}: ${name} as the session id gets a 400 naming ${param}`, async () => {
        const answer = await httpRequest(test.url, method, pathOf(id), method === "POST" ? json : {}, method === "POST" ? JSON.stringify({ message: "hi" }) : undefined);
        assert.equal(answer.status, 400, answer.text);
        const { error } = JSON.parse(answer.text);
        assert.equal(error.code, "invalid_session_id");
        assert.equal(error.param, param);
      });
    }
  }

  // An executor id goes to DBOS's queries on PostgreSQL: a NUL there was a 500 on a durable server.
  const EXECUTOR_IDS: Array<[string, unknown]> = [
    ["a NUL character", "replica\u00000"],
    ["a lone surrogate", "replica-\ud800"],
    ["a control character", "replica\n0"],
    ["too long (257 characters)", "r".repeat(257)],
    ["empty", ""],
    ["not a string", 42],
    ["a list with one bad id", ["replica-0", "bad\u0000"]],
    ["an empty list", []],
    ["a list of 101 ids", Array.from({ length: 101 }, (_, index) => `replica-${index}`)],
  ];
  for (const [name, executorId] of EXECUTOR_IDS) {
    it(`POST /v1/runs/recover: ${name} as the executor_id gets a 400 naming executor_id`, async () => {
      const answer = await httpRequest(test.url, "POST", "/v1/runs/recover", json, JSON.stringify({ executor_id: executorId }));
      assert.equal(answer.status, 400, answer.text);
      const { error } = JSON.parse(answer.text);
      assert.equal(error.code, "invalid_executor_id");
      assert.equal(error.param, "executor_id");
      assert.match(error.message, /^executor_id must be an executor id or a list of 1-100 of them \(each 1-256 characters, without control characters or lone surrogates\)/);
    });
  }
  it("POST /v1/runs/recover: a valid executor id passes the check (durable runs are off here: 404)", async () => {
    for (const executorId of ["replica-0", "host.example.com", ["a", "b"], "r".repeat(256)]) {
      const answer = await httpRequest(test.url, "POST", "/v1/runs/recover", json, JSON.stringify({ executor_id: executorId }));
      assert.equal(answer.status, 404, answer.text);
      assert.equal(JSON.parse(answer.text).error.code, "durable_off");
    }
  });

  it("logged no unexpected error", () => {
    assert.deepEqual(
      test.logs.filter((line) => /unexpected error|failed:/.test(line)),
      [],
    );
  });
});

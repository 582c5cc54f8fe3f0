// How a run ends, through each protocol of the same server: a guardrail-denied call, a rejected
// approval, a step limit and a model failure end chat completions, the UI message stream and AG-UI
// each the way the protocol defines, and the session's memory is the same whichever protocol ran it.
// A client that closes its socket mid-stream aborts chat completions' and AG-UI's run (what was
// streamed is kept); the UI message stream's run answers in full (a reload resumes it); the server
// and each session then take the next chat.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, describe, it } from "node:test";
import { type Model, ScriptedModel } from "../../src/index.js";
import { postJson, startTestServer, type TestServer } from "../server/helpers.js";
import { echo, FailingModel, writeFile } from "./scenarios.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });
const sseData = (text: string) =>
  text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => block.slice("data: ".length))
    .filter((data) => data !== "[DONE]")
    .map((data) => JSON.parse(data) as Record<string, unknown>);

type Protocol = "chat-completions" | "ui" | "ag-ui";
const protocols: Protocol[] = ["chat-completions", "ui", "ag-ui"];

/** Sends one input through a protocol; the stream's (or body's) last meaningful items. */
async function send(server: TestServer, protocol: Protocol, session: string, text: string): Promise<Array<Record<string, unknown>>> {
  if (protocol === "chat-completions") {
    const response = await postJson(`${server.url}/v1/chat/completions`, { stream: true, session_id: session, messages: [{ role: "user", content: text }] });
    return sseData(await response.text());
  }
  if (protocol === "ui") {
    const response = await postJson(`${server.url}/api/chat`, { id: session, trigger: "submit-message", messages: [{ id: "u", role: "user", parts: [{ type: "text", text }] }] });
    return sseData(await response.text());
  }
  const response = await postJson(`${server.url}/ag-ui`, { threadId: session, runId: "r1", messages: [{ id: "u", role: "user", content: text }] });
  return sseData(await response.text());
}

/** Rejects the pending call `callId` through the protocol's own way of answering. */
async function reject(server: TestServer, protocol: Protocol, session: string, callId: string): Promise<Array<Record<string, unknown>>> {
  if (protocol === "chat-completions") {
    const response = await postJson(`${server.url}/v1/approvals`, { session_id: session, decisions: { [callId]: { approve: false, reason: "not now" } } });
    return sseData(await response.text());
  }
  if (protocol === "ui") {
    const assistant = { id: "a", role: "assistant", parts: [{ type: "tool-write_file", toolCallId: callId, state: "approval-responded", input: { path: "a.txt" }, approval: { id: callId, approved: false, reason: "not now" } }] };
    const response = await postJson(`${server.url}/api/chat`, { id: session, trigger: "submit-message", messages: [{ id: "u", role: "user", parts: [{ type: "text", text: "write" }] }, assistant] });
    return sseData(await response.text());
  }
  const response = await postJson(`${server.url}/ag-ui`, { threadId: session, runId: "r2", messages: [], resume: [{ interruptId: callId, status: "resolved", payload: { approve: false, reason: "not now" } }] });
  return sseData(await response.text());
}

/** The session's stored events, as type and content (tool results, answers), ids left out. */
async function stored(server: TestServer, session: string): Promise<string[]> {
  const response = await fetch(`${server.url}/memory/events?session_id=${session}&limit=1000`);
  const events = ((await response.json()) as { events: Array<{ event_type: string; content: unknown }> }).events;
  return events.map((event) => {
    const content = event.content as Record<string, unknown> | string | null;
    const summary = typeof content === "string" ? content : content && typeof content === "object" ? (content.result ?? content.tool_name ?? content.state ?? "") : "";
    return `${event.event_type}:${typeof summary === "string" ? summary : JSON.stringify(summary)}`;
  });
}

const servers: TestServer[] = [];
after(() => Promise.all(servers.map((server) => server.close())));
async function serve(model: Model, env: Record<string, string> = {}, file: Record<string, unknown> = {}): Promise<TestServer> {
  const server = await startTestServer({ AGENT_NAME: "endings", ...env }, { file, build: { model, tools: [echo, writeFile] } });
  servers.push(server);
  return server;
}

/** The ending each protocol gives, in its own terms. */
function ending(protocol: Protocol, items: Array<Record<string, unknown>>): unknown {
  const last = items.at(-1)!;
  if (protocol === "chat-completions") return "error" in last ? "error" : (last.choices as Array<{ finish_reason: string }>)[0].finish_reason;
  if (protocol === "ui") return last.type === "finish" ? `finish:${last.finishReason}` : last.type;
  return last.type === "RUN_FINISHED" ? `RUN_FINISHED:${(last.outcome as { type: string }).type}` : last.type;
}

describe("run endings through every protocol, and the same memory", () => {
  const cases: Array<{ name: string; model: () => Model; env?: Record<string, string>; file?: Record<string, unknown>; rejectCall?: string; endings: Record<Protocol, unknown> }> = [
    {
      name: "a guardrail-denied call (the run goes on to its answer)",
      model: () => new ScriptedModel([calls(["call_e", "echo", { text: "x" }]), "The echo was denied."]),
      file: { guardrails: { deniedTools: [{ tools: ["echo"], reason: "no echoes" }] } },
      endings: { "chat-completions": "stop", ui: "finish:stop", "ag-ui": "RUN_FINISHED:success" },
    },
    {
      name: "a rejected approval",
      model: () => new ScriptedModel([calls(["call_w", "write_file", { path: "a.txt" }]), "Not written."]),
      rejectCall: "call_w",
      endings: { "chat-completions": "stop", ui: "finish:stop", "ag-ui": "RUN_FINISHED:success" },
    },
    {
      name: "a step limit",
      model: () => new ScriptedModel([calls(["call_e", "echo", { text: "1" }]), calls(["call_f", "echo", { text: "2" }])]),
      env: { AGENTIC_LOOP_MAX_STEPS: "1" },
      endings: { "chat-completions": "length", ui: "finish:length", "ag-ui": "RUN_FINISHED:success" },
    },
    {
      name: "a model failure",
      model: () => new FailingModel(),
      endings: { "chat-completions": "error", ui: "error", "ag-ui": "RUN_ERROR" },
    },
  ];
  for (const entry of cases) {
    it(entry.name, async () => {
      const server = await serve(entry.model(), entry.env, entry.file);
      const memories: string[][] = [];
      for (const protocol of protocols) {
        const session = `${protocol}-${entry.name.split(" ")[1]}`;
        let items = await send(server, protocol, session, "go");
        if (entry.rejectCall) items = await reject(server, protocol, session, entry.rejectCall);
        assert.deepEqual(ending(protocol, items), entry.endings[protocol], `${protocol}: ${JSON.stringify(items.at(-1))}`);
        if (entry.name.startsWith("a guardrail") || entry.rejectCall) {
          const denied = protocol === "ui" ? items.some((item) => item.type === "tool-output-denied") : true;
          assert.ok(denied, `${protocol}: the call shows as denied`);
        }
        memories.push(await stored(server, session));
      }
      assert.ok(memories[0].length > 0);
      assert.deepEqual(memories[1], memories[0], "the UI message stream stored what chat completions stored");
      assert.deepEqual(memories[2], memories[0], "AG-UI stored what chat completions stored");
    });
  }
});

describe("a client that leaves mid-answer (its socket closed mid-stream)", () => {
  const words = Array.from({ length: 60 }, (_, index) => `w${index}`).join(" ");
  /** The session's stored events, full. */
  async function events(server: TestServer, session: string): Promise<Array<{ event_type: string; content: Record<string, unknown> }>> {
    const response = await fetch(`${server.url}/memory/events?session_id=${session}&limit=1000`);
    return ((await response.json()) as { events: Array<{ event_type: string; content: Record<string, unknown> }> }).events;
  }
  /**
   * Posts a streamed request on a socket of its own (node:http), destroys the socket once the
   * answer started, then waits for the run's end in the session's memory; the session's events.
   */
  async function leave(server: TestServer, path: string, body: object, session: string): Promise<Array<{ event_type: string; content: Record<string, unknown> }>> {
    const url = new URL(server.url);
    await new Promise<void>((resolve, reject) => {
      const request = httpRequest({ host: url.hostname, port: url.port, path, method: "POST", headers: { "content-type": "application/json" } }, (response) => {
        assert.equal(response.statusCode, 200);
        let seen = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          seen += chunk;
          if (!seen.includes("w1 ")) return;
          request.destroy();
          resolve();
        });
        response.on("end", () => reject(new Error(`${path}: the stream ended before the client left: ${seen.slice(-300)}`)));
      });
      request.on("error", (error) => reject(error));
      request.end(JSON.stringify(body));
    });
    for (;;) {
      const stored = await events(server, session);
      if (stored.some((event) => event.event_type === "run_ended")) return stored;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  const endOf = (stored: Array<{ event_type: string; content: Record<string, unknown> }>) => stored.find((event) => event.event_type === "run_ended")?.content.state;
  const types = (stored: Array<{ event_type: string }>) => stored.map((event) => event.event_type);

  it("chat completions and AG-UI abort the run (stored ABORTED, the same events); the UI message stream's run goes on to its whole answer (a reload resumes it); the server and the sessions take the next chat", async () => {
    const server = await serve(new ScriptedModel([words], { chunkDelayMs: 10 }));
    const cc = await leave(server, "/v1/chat/completions", { stream: true, session_id: "gone-cc", messages: [{ role: "user", content: "go" }] }, "gone-cc");
    const agUi = await leave(server, "/ag-ui", { threadId: "gone-ag", runId: "r", messages: [{ id: "u", role: "user", content: "go" }] }, "gone-ag");
    const ui = await leave(server, "/api/chat", { id: "gone-ui", trigger: "submit-message", messages: [{ id: "u", role: "user", parts: [{ type: "text", text: "go" }] }] }, "gone-ui");
    const answerOf = (stored: Array<{ event_type: string; content: unknown }>) => stored.find((event) => event.event_type === "agent_response")?.content;
    for (const [name, stored] of [["chat completions", cc], ["AG-UI", agUi]] as const) {
      assert.deepEqual(types(stored), ["run_started", "user_message", "agent_response", "run_ended"], name);
      assert.equal(endOf(stored), "ABORTED", name);
      // What was streamed before the client left is kept, and nothing after: the run stopped.
      const partial = answerOf(stored) as string;
      assert.ok(partial.startsWith("w0 w1") && words.startsWith(partial) && partial.length < words.length, `${name}: ${partial}`);
    }
    assert.deepEqual(types(ui), ["run_started", "user_message", "agent_response", "run_ended"]);
    assert.equal(endOf(ui), "COMPLETED");
    assert.equal(answerOf(ui), words, "the UI message stream's run answered in full without its client");
    assert.equal((await fetch(`${server.url}/api/chat/gone-ui/stream`)).status, 204, "nothing left to resume once it ended");
    // The server stays healthy, and each session takes its next chat through its protocol.
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    const again = await Promise.all([send(server, "chat-completions", "gone-cc", "again"), send(server, "ag-ui", "gone-ag", "again"), send(server, "ui", "gone-ui", "again")]);
    assert.deepEqual([ending("chat-completions", again[0]), ending("ag-ui", again[1]), ending("ui", again[2])], ["stop", "RUN_FINISHED:success", "finish:stop"]);
    for (const session of ["gone-cc", "gone-ag", "gone-ui"]) assert.equal(endOf((await events(server, session)).slice(4)), "COMPLETED", session);
  });
});

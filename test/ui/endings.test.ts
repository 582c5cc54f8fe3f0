// How a run ends, through each protocol of the same server: a guardrail-denied call, a rejected
// approval, a step limit and a model failure end chat completions, the UI message stream and AG-UI
// each the way the protocol defines, and the session's memory is the same whichever protocol ran it.
import assert from "node:assert/strict";
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

describe("a client that leaves mid-answer", () => {
  const words = Array.from({ length: 60 }, (_, index) => `w${index}`).join(" ");
  /** Starts a streamed request and leaves once the answer started; resolves when the run's end is stored. */
  async function leave(server: TestServer, path: string, body: object, session: string): Promise<string> {
    const controller = new AbortController();
    const response = await postJson(`${server.url}${path}`, body, {}, controller.signal);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while (!seen.includes("w1 ")) seen += decoder.decode((await reader.read()).value ?? new Uint8Array(), { stream: true });
    controller.abort();
    await reader.cancel().catch(() => undefined);
    for (;;) {
      const response = await fetch(`${server.url}/memory/events?session_id=${session}&limit=1000`);
      const events = ((await response.json()) as { events: Array<{ event_type: string; content: { state?: string } }> }).events;
      const end = events.find((event) => event.event_type === "run_ended");
      if (end) return end.content.state ?? "";
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it("chat completions and AG-UI abort the run (stored ABORTED); the UI message stream's run goes on (a reload resumes it)", async () => {
    const server = await serve(new ScriptedModel([words], { chunkDelayMs: 10 }));
    assert.equal(await leave(server, "/v1/chat/completions", { stream: true, session_id: "gone-cc", messages: [{ role: "user", content: "go" }] }, "gone-cc"), "ABORTED");
    assert.equal(await leave(server, "/ag-ui", { threadId: "gone-ag", runId: "r", messages: [{ id: "u", role: "user", content: "go" }] }, "gone-ag"), "ABORTED");
    assert.equal(await leave(server, "/api/chat", { id: "gone-ui", messages: [{ id: "u", role: "user", parts: [{ type: "text", text: "go" }] }] }, "gone-ui"), "COMPLETED");
  });
});

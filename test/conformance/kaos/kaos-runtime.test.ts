// KAOS conformance: what KAOS's current runtime (github.com/axsaucedo/kaos, data-plane/kaos-framework,
// agent/server.py and agent/client.py at 43f4851, 2026-01-31) does at the HTTP level, asked of
// `agentloop serve` processes. Written from KAOS's behaviour, not copied from its tests: a KAOS-format
// mock script (DEBUG_MOCK_RESPONSES with fenced blocks) drives a real MCP tool (the everything server
// over Streamable HTTP, configured the KAOS way) and a delegation to a second `serve` process.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { type AgentServer, createAgentServer } from "../../../src/server/index.js";
import { cliArgs } from "../../cli/helpers.js";
import { freePort, type RunningHttpServer, startEverythingHttp } from "../../mcp/helpers.js";

const block = (kind: "tool_call" | "delegate", value: object) => `\`\`\`${kind}\n${JSON.stringify(value)}\n\`\`\``;

interface Serve {
  url: string;
  child: ChildProcess;
  stderr: string[];
  stop(): Promise<void>;
}

/** `agentloop serve` on 127.0.0.1 and a free port, configured by KAOS's variables only. */
async function serve(env: Record<string, string>): Promise<Serve> {
  const child = spawn(process.execPath, cliArgs(["serve", "--host", "127.0.0.1", "--port", "0", "--json"]), {
    env: { ...process.env, MEMORY_TYPE: "local", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stderr: string[] = [];
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = "";
    let listening: string | undefined;
    // Generous: on a loaded machine a node process takes many seconds to start.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve did not get ready within 100 s: ${stderr.join("")}`));
    }, 100_000);
    child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        const event = JSON.parse(line) as { event: string; url?: string; status?: string };
        if (event.event === "listening") listening = event.url;
        if (event.event === "ready") {
          clearTimeout(timer);
          if (event.status === "ready" && listening) resolve(listening);
          else reject(new Error(`serve is ${event.status}: ${stderr.join("")}`));
        }
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${stderr.join("")}`));
    });
  });
  return {
    url,
    child,
    stderr,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

const getJson = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as Record<string, any> };
};
const chat = (url: string, body: object) => fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("KAOS runtime conformance (serve processes, a real MCP tool)", () => {
  let everything: RunningHttpServer;
  let worker: Serve;
  let looper: AgentServer;
  let looperUrl: string;
  let coordinator: Serve;
  before(async () => {
    everything = await startEverythingHttp(await freePort());
    const mcp = { MCP_SERVERS: "[everything]", MCP_SERVER_everything_URL: `http://127.0.0.1:${everything.port}/mcp` };
    const again = block("tool_call", { tool: "echo", arguments: { message: "again" } });
    worker = await serve({ AGENT_NAME: "worker", AGENT_DESCRIPTION: "Checks arithmetic.", DEBUG_MOCK_RESPONSES: JSON.stringify(["Worker checked it: 5 + 3 = 8."]) });
    // The step limit is asked of an in-process server configured the same way (one process fewer).
    looper = await createAgentServer({
      env: { AGENT_NAME: "looper", TOOL_CALL_MODE: "fenced", AGENTIC_LOOP_MAX_STEPS: "3", MEMORY_TYPE: "local", ...mcp, DEBUG_MOCK_RESPONSES: JSON.stringify([again, again, again, again, again]) },
      log: () => {},
    });
    looperUrl = await looper.listen(0, "127.0.0.1");
    assert.equal((await looper.ready()).status, "ready");
    // Started once the worker listens: a peer is looked up when the agent starts.
    coordinator = await serve({
      AGENT_NAME: "coordinator",
      AGENT_DESCRIPTION: "Coordinates work.",
      TOOL_CALL_MODE: "fenced",
      AGENTIC_LOOP_MAX_STEPS: "3",
      ...mcp,
      PEER_AGENTS: "worker",
      PEER_AGENT_WORKER_CARD_URL: worker.url,
      // KAOS's mock format: prose, then a fenced block; one entry per model call.
      DEBUG_MOCK_RESPONSES: JSON.stringify([
        `I will add the numbers first.\n${block("tool_call", { tool: "get-sum", arguments: { a: 5, b: 3 } })}`,
        block("delegate", { agent: "worker", task: "Check that 5 + 3 = 8" }),
        "The sum is 8, and the worker confirmed it.",
      ]),
    });
  });
  after(async () => {
    await Promise.all([coordinator?.stop(), worker?.stop(), looper?.close({ graceMs: 1000 })]);
    await everything?.stop();
  });

  it("answers /health and /ready with status, name and a Unix timestamp", async () => {
    for (const [path, status] of [
      ["/health", "healthy"],
      ["/ready", "ready"],
    ]) {
      const { body } = await getJson(`${coordinator.url}${path}`);
      assert.equal(body.status, status);
      assert.equal(body.name, "coordinator");
      assert.ok(Number.isInteger(body.timestamp));
    }
  });

  it("serves KAOS's card at /.well-known/agent: capabilities as a list, MCP tools as skills with inputSchema", async () => {
    const { body: card } = await getJson(`${coordinator.url}/.well-known/agent`);
    assert.deepEqual(Object.keys(card).sort(), ["capabilities", "description", "name", "skills", "url"]);
    assert.equal(card.name, "coordinator");
    assert.equal(card.description, "Coordinates work.");
    assert.deepEqual(card.capabilities, ["message_processing", "task_execution", "tool_execution", "task_delegation"]);
    const sum = card.skills.find((skill: { name: string }) => skill.name === "get-sum");
    assert.ok(sum, JSON.stringify(card.skills.map((skill: { name: string }) => skill.name)));
    assert.equal(typeof sum.description, "string");
    assert.deepEqual(Object.keys(sum.inputSchema.properties).sort(), ["a", "b"]);
    assert.equal(card.skills.some((skill: { name: string }) => skill.name.startsWith("delegate_to_")), false);

    const { body: workerCard } = await getJson(`${worker.url}/.well-known/agent`);
    assert.deepEqual(workerCard.capabilities, ["message_processing", "task_execution"]);
    assert.deepEqual(workerCard.skills, []);
  });

  it("keeps A2A's card at /.well-known/agent.json and /.well-known/agent-card.json", async () => {
    for (const path of ["/.well-known/agent.json", "/.well-known/agent-card.json"]) {
      const { body } = await getJson(`${coordinator.url}${path}`);
      assert.equal(typeof body.capabilities, "object");
      assert.equal(Array.isArray(body.capabilities), false);
      assert.ok(Array.isArray(body.supportedInterfaces));
    }
  });

  it("runs the KAOS mock script: the MCP tool, then the delegation to the peer, then the answer", async () => {
    const response = await chat(coordinator.url, { model: "coordinator", session_id: "kaos-flow", messages: [{ role: "user", content: "What is 5 + 3? Have it checked." }] });
    assert.equal(response.status, 200);
    const body = (await response.json()) as Record<string, any>;
    assert.equal(body.object, "chat.completion");
    assert.match(body.id, /^chatcmpl-/);
    assert.equal(body.choices[0].message.role, "assistant");
    assert.equal(body.choices[0].message.content, "The sum is 8, and the worker confirmed it.");
    assert.equal(body.choices[0].finish_reason, "stop");

    const { body: memory } = await getJson(`${coordinator.url}/memory/events?session_id=kaos-flow`);
    assert.equal(memory.agent, "coordinator");
    const kinds = memory.events.map((event: { event_type: string }) => event.event_type);
    const order = ["user_message", "tool_call", "tool_result", "delegation_request", "delegation_response", "agent_response"].map((kind) => kinds.indexOf(kind));
    assert.ok(order.every((index, position) => index !== -1 && (position === 0 || index > order[position - 1])), `events in KAOS's order: ${kinds.join(", ")}`);
    const toolResult = memory.events.find((event: { event_type: string }) => event.event_type === "tool_result");
    assert.match(JSON.stringify(toolResult.content), /8/);
    const delegation = memory.events.find((event: { event_type: string }) => event.event_type === "delegation_response");
    assert.match(JSON.stringify(delegation.content), /Worker checked it/);

    // The peer got the task as a task-delegation message and recorded it.
    const { body: workerMemory } = await getJson(`${worker.url}/memory/events`);
    const received = workerMemory.events.filter((event: { event_type: string }) => event.event_type === "task_delegation_received");
    assert.ok(received.some((event: { content: unknown }) => JSON.stringify(event.content).includes("Check that 5 + 3 = 8")), JSON.stringify(workerMemory.events));
  });

  it("streams only the final answer as SSE chunks, ending with [DONE]", async () => {
    const response = await chat(coordinator.url, { stream: true, messages: [{ role: "user", content: "Add again" }] });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
    const text = await response.text();
    const data = text
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => line.slice(6));
    assert.equal(data.at(-1), "[DONE]");
    const chunks = data.slice(0, -1).map((line) => JSON.parse(line) as { object?: string; choices?: Array<{ delta: { content?: string } }> });
    const pieces = chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? "");
    assert.ok(chunks.some((chunk) => chunk.object === "chat.completion.chunk"));
    // agentloop's progress blocks (one per call, as the KAOS UI reads them) come first, then the answer.
    const progress = pieces.filter((piece) => piece.startsWith('{"type":"progress"')).map((piece) => JSON.parse(piece));
    assert.deepEqual(
      progress.map((block) => [block.step, block.max_steps, block.action, block.target]),
      [
        [1, 3, "tool_call", "get-sum"],
        [2, 3, "delegate", "worker"],
      ],
    );
    const content = pieces.filter((piece) => !piece.startsWith('{"type":"progress"')).join("");
    assert.equal(content, "The sum is 8, and the worker confirmed it.");
    // The commentary before the tool call is not part of the answer.
    assert.doesNotMatch(content, /I will add/);
  });

  it("answers an unknown session's events with 200 and none, and lists sessions", async () => {
    const unknown = await getJson(`${coordinator.url}/memory/events?session_id=never-seen`);
    assert.equal(unknown.status, 200);
    assert.deepEqual([unknown.body.events, unknown.body.total], [[], 0]);
    const sessions = await getJson(`${coordinator.url}/memory/sessions`);
    assert.equal(sessions.body.agent, "coordinator");
    assert.ok(sessions.body.sessions.includes("kaos-flow"));
    assert.equal(sessions.body.total, sessions.body.sessions.length);
  });

  it("rejects requests without messages, or without a user or task-delegation message, with 400", async () => {
    for (const body of [{}, { messages: [] }, { messages: [{ role: "system", content: "only a system prompt" }] }]) {
      const response = await chat(worker.url, body);
      assert.ok(response.status === 400 || response.status === 422, `${JSON.stringify(body)} → ${response.status}`);
    }
  });
  it("ends with `Reached maximum reasoning steps (N)` after N tool calls", async () => {
    const response = await chat(looperUrl, { session_id: "loop", messages: [{ role: "user", content: "Echo forever" }] });
    const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
    assert.equal(body.choices[0].message.content, "Reached maximum reasoning steps (3)");
    const { body: memory } = await getJson(`${looperUrl}/memory/events?session_id=loop`);
    assert.equal(memory.events.filter((event: { event_type: string }) => event.event_type === "tool_call").length, 3);
  });
});

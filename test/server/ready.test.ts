import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { usefulStderrLine } from "../../src/mcp/toolset.js";
import { everythingServerPath, freePort } from "../mcp/helpers.js";
import { postJson, script, startTestServer, toolCall } from "./helpers.js";

const stateTypes = (type: string) => !type.startsWith("run_");

describe("readiness and KAOS sub-agents", () => {
  it("is ready once its peer answered, delegates KAOS-style, and the peer records task_delegation_received", async () => {
    const worker = await startTestServer({ AGENT_NAME: "worker", DEBUG_MOCK_RESPONSES: script("processed by worker") });
    const coordinator = await startTestServer({
      AGENT_NAME: "coordinator",
      AGENT_SUB_AGENTS: `worker:${worker.url}`,
      DEBUG_MOCK_RESPONSES: script(toolCall("delegate_to_worker", { task: "process data" }), "Done."),
    });
    try {
      const status = await coordinator.server.ready();
      assert.equal(status.status, "ready");
      const ready = await fetch(`${coordinator.url}/ready`);
      assert.equal(ready.status, 200);
      const now = Math.floor(Date.now() / 1000);
      // KAOS's shapes exactly: the timestamp is Unix seconds.
      const body = (await ready.json()) as { status: string; name: string; timestamp: number };
      assert.deepEqual(Object.keys(body).sort(), ["name", "status", "timestamp"]);
      assert.deepEqual([body.status, body.name], ["ready", "coordinator"]);
      assert.ok(Number.isInteger(body.timestamp) && Math.abs(body.timestamp - now) <= 5, `timestamp ${body.timestamp} is Unix seconds`);
      const health = (await (await fetch(`${coordinator.url}/health`)).json()) as { status: string; name: string; timestamp: number };
      assert.deepEqual(Object.keys(health).sort(), ["name", "status", "timestamp"]);
      assert.deepEqual([health.status, health.name], ["healthy", "coordinator"]);
      assert.ok(Number.isInteger(health.timestamp) && Math.abs(health.timestamp - now) <= 5);

      const card = (await (await fetch(`${coordinator.url}/.well-known/agent.json`)).json()) as { skills: Array<{ id: string }> };
      assert.ok(card.skills.some((skill) => skill.id === "delegate_to_worker"));
      // KAOS's RemoteAgent discovers a peer at /.well-known/agent: KAOS's card shape is served there.
      const kaosCard = (await (await fetch(`${coordinator.url}/.well-known/agent`)).json()) as { name: string; capabilities: string[] };
      assert.equal(kaosCard.name, "coordinator");
      assert.ok(kaosCard.capabilities.includes("task_delegation"));

      const response = await postJson(`${coordinator.url}/v1/chat/completions`, { session_id: "delegating", stream: true, messages: [{ role: "user", content: "get it processed" }] });
      const text = await response.text();
      assert.match(text, /\{\\"type\\":\\"progress\\",\\"step\\":1,\\"max_steps\\":5,\\"action\\":\\"delegate\\",\\"target\\":\\"worker\\"\}/);
      const events = (await (await fetch(`${coordinator.url}/memory/events?session_id=delegating`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      assert.deepEqual(
        events.events.map((event) => event.event_type).filter(stateTypes),
        ["user_message", "delegation_request", "delegation_response", "agent_response"],
      );
      assert.match(JSON.stringify(events.events.find((event) => event.event_type === "delegation_response")), /processed by worker/);
      const workerEvents = (await (await fetch(`${worker.url}/memory/events`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      // The KAOS parent's task-delegation message is recorded before the worker's own run.
      assert.deepEqual(
        workerEvents.events.map((event) => event.event_type).filter(stateTypes),
        ["task_delegation_received", "user_message", "agent_response"],
      );
      assert.equal(workerEvents.events[0].content, "process data");
    } finally {
      await coordinator.close();
      await worker.close();
    }
  });

  it("calls a sub-agent configured as A2A through the A2A protocol", async () => {
    const worker = await startTestServer({ AGENT_NAME: "remote-worker", DEBUG_MOCK_RESPONSES: script("answered over A2A") });
    const coordinator = await startTestServer(
      { DEBUG_MOCK_RESPONSES: script(toolCall("delegate_to_remote", { task: "look it up" }), "Relayed.") },
      { file: { name: "a2a-coordinator", subAgents: [{ name: "remote", url: worker.url, protocol: "a2a" }] } },
    );
    try {
      assert.equal((await coordinator.server.ready()).status, "ready");
      const response = await postJson(`${coordinator.url}/v1/chat/completions`, { session_id: "via-a2a", messages: [{ role: "user", content: "ask the remote" }] });
      assert.equal(((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content, "Relayed.");
      const events = (await (await fetch(`${coordinator.url}/memory/events?session_id=via-a2a`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      assert.match(JSON.stringify(events.events.find((event) => event.event_type === "delegation_response")?.content), /answered over A2A/);
      // The worker got an A2A message (no KAOS task-delegation receipt), recorded under its context id.
      const workerEvents = (await (await fetch(`${worker.url}/memory/events`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      assert.deepEqual(
        workerEvents.events.map((event) => event.event_type).filter(stateTypes),
        ["user_message", "agent_response"],
      );
      assert.equal(workerEvents.events.find((event) => event.event_type === "user_message")?.content, "look it up");
    } finally {
      await coordinator.close();
      await worker.close();
    }
  });

  it("reports degraded, naming the peer, when a sub-agent's card does not answer in time", async () => {
    const port = await freePort();
    const test = await startTestServer({ AGENT_SUB_AGENTS: `ghost:http://127.0.0.1:${port}`, DEBUG_MOCK_RESPONSES: script("still here") }, { readyTimeoutMs: 300 });
    try {
      const response = await fetch(`${test.url}/ready`);
      const body = (await response.json()) as { status: string; unavailable?: Array<{ kind: string; name: string; reason: string }> };
      if (body.status === "starting") assert.equal(response.status, 503);
      const status = await test.server.ready();
      assert.equal(status.status, "degraded");
      const degraded = (await (await fetch(`${test.url}/ready`)).json()) as typeof body;
      assert.equal(degraded.status, "degraded");
      assert.equal(degraded.unavailable?.[0].kind, "agent");
      assert.equal(degraded.unavailable?.[0].name, "ghost");
      await test.waitForLog(/degraded: agent "ghost" unavailable/);
      // It still answers.
      const answer = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }] });
      assert.equal(((await answer.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content, "still here");
    } finally {
      await test.close();
    }
  });

  it("connects its MCP servers from the agent file and lists their tools as skills", async () => {
    const test = await startTestServer(
      { DEBUG_MOCK_RESPONSES: script(toolCall("echo", { message: "from mcp" }), "MCP said it") },
      { file: { name: "mcp-agent", mcpServers: [{ name: "everything", command: process.execPath, args: [everythingServerPath, "stdio"] }] }, build: {} },
    );
    try {
      const status = await test.server.ready();
      assert.equal(status.status, "ready");
      const card = (await (await fetch(`${test.url}/.well-known/agent.json`)).json()) as { name: string; skills: Array<{ id: string }> };
      assert.equal(card.name, "mcp-agent");
      assert.ok(card.skills.some((skill) => skill.id === "echo"));
      const response = await postJson(`${test.url}/v1/chat/completions`, { session_id: "mcp", messages: [{ role: "user", content: "echo please" }] });
      assert.equal(response.status, 200);
      const events = (await (await fetch(`${test.url}/memory/events?session_id=mcp`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      assert.match(JSON.stringify(events.events.find((event) => event.event_type === "tool_result")), /from mcp/);
    } finally {
      await test.close();
    }
  });

  it("keeps the useful line of an MCP server that fails to start in /ready (not Node's version footer)", async () => {
    const missing = join(tmpdir(), "agentloop-no-such-dir", "mcp-server.js");
    const test = await startTestServer(
      { DEBUG_MOCK_RESPONSES: script("hi") },
      { readyTimeoutMs: 5_000, file: { name: "broken-mcp", mcpServers: [{ name: "everything", command: process.execPath, args: [missing, "stdio"] }] }, build: {} },
    );
    try {
      await test.server.ready();
      const body = (await (await fetch(`${test.url}/ready`)).json()) as { status: string; unavailable: Array<{ kind: string; name: string; reason: string }> };
      assert.equal(body.status, "degraded");
      assert.equal(body.unavailable[0].name, "everything");
      assert.match(body.unavailable[0].reason, /server stderr: Error: Cannot find module '.*mcp-server\.js'/);
    } finally {
      await test.close();
    }
  });

  it("picks the error line of a server's stderr: a Python traceback's last line, Node's error line", () => {
    const python = "Traceback (most recent call last):\n  File \"/srv/server.py\", line 1, in <module>\n    import mcp\nModuleNotFoundError: No module named 'mcp'\n";
    assert.equal(usefulStderrLine(python), "ModuleNotFoundError: No module named 'mcp'");
    const node = "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/x.js'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n    at node:internal/main/run_main_module:28:49 {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n\nNode.js v20.20.2\n";
    assert.equal(usefulStderrLine(node), "Error: Cannot find module '/x.js'");
    assert.equal(usefulStderrLine("listening on stdio\nbad token in config.json\n"), "bad token in config.json");
  });
});

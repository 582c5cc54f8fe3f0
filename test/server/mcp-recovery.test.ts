// An MCP server behind `agentloop serve` that is down at start, comes up, dies and comes back: a
// real everything-server process over Streamable HTTP. `/ready` and the agent card follow it, and
// its tools are used again once it is back (reconnection for as long as the process lives).
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { freePort, type RunningHttpServer, startEverythingHttp } from "../mcp/helpers.js";
import { postJson, script, startTestServer, type TestServer, toolCall } from "./helpers.js";

interface Ready {
  status: string;
  unavailable?: Array<{ kind: string; name: string; reason: string }>;
}

describe("serve: an MCP server that goes down and comes back", () => {
  let mcp: RunningHttpServer | undefined;
  let agent: TestServer | undefined;
  after(async () => {
    await agent?.close();
    await mcp?.stop();
  });

  test("/ready and the card follow the server; its tools work again when it is back", async () => {
    const port = await freePort();
    agent = await startTestServer(
      {
        MCP_SERVERS: "ev",
        MCP_SERVER_EV_URL: `http://127.0.0.1:${port}`,
        DEBUG_MOCK_RESPONSES: script(toolCall("echo", { message: "still there?" }), "done"),
      },
      { readyTimeoutMs: 1_000, build: { tools: [], mcp: { pingIntervalMs: 100, reconnectDelayMs: 100, maxReconnectDelayMs: 500 } } },
    );
    let ready = (await agent.server.ready()) as Ready;
    // Down at start: degraded, named, and no skill of its own on the card.
    assert.equal(ready.status, "degraded");
    assert.deepEqual(ready.unavailable?.map((item) => [item.kind, item.name]), [["mcp", "ev"]]);
    const readyOf = async () => (await (await fetch(`${agent!.url}/ready`)).json()) as Ready;
    const skills = async () => ((await (await fetch(`${agent!.url}/.well-known/agent.json`)).json()) as { skills: Array<{ id: string }> }).skills.map((skill) => skill.id);
    assert.equal((await skills()).includes("echo"), false);
    const earlier = await fetch(`${agent.url}/.well-known/agent-card.json`);
    const [etag, lastModified] = [earlier.headers.get("etag")!, earlier.headers.get("last-modified")!];

    // It comes up: ready, and its tools are on the card.
    mcp = await startEverythingHttp(port);
    await pollUntil(async () => (await readyOf()).status === "ready", "ready once the server is up");
    assert.ok((await skills()).includes("echo"));
    // The card changed: a client revalidating its old copy gets the new one, with later validators.
    for (const conditional of [{ "if-none-match": etag }, { "if-modified-since": lastModified }] as Array<Record<string, string>>) {
      const after = await fetch(`${agent.url}/.well-known/agent-card.json`, { headers: conditional });
      assert.equal(after.status, 200, JSON.stringify(conditional));
      assert.notEqual(after.headers.get("etag"), etag);
      assert.ok(Date.parse(after.headers.get("last-modified")!) > Date.parse(lastModified));
      assert.ok(((await after.json()) as { skills: Array<{ id: string }> }).skills.some((skill) => skill.id === "echo"));
    }

    // It dies: the pings notice, /ready is degraded (200) naming it, its tools leave the card.
    await mcp.stop();
    await pollUntil(async () => (await readyOf()).status === "degraded", "degraded once the server is gone");
    const response = await fetch(`${agent.url}/ready`);
    assert.equal(response.status, 200);
    ready = (await response.json()) as Ready;
    assert.equal(ready.unavailable?.[0]?.name, "ev");
    assert.match(ready.unavailable?.[0]?.reason ?? "", /./);
    assert.equal((await skills()).includes("echo"), false);

    // It comes back (a new process, new sessions): used again.
    mcp = await startEverythingHttp(port);
    await pollUntil(async () => (await readyOf()).status === "ready", "ready again once the server is back");
    assert.ok((await skills()).includes("echo"));
    const chat = await postJson(`${agent.url}/v1/chat/completions`, { messages: [{ role: "user", content: "echo something" }] }, { "X-Session-ID": "mcp-back" });
    assert.equal(chat.status, 200);
    const events = (await (await fetch(`${agent.url}/memory/events?session_id=mcp-back`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
    const result = events.events.find((event) => event.event_type === "tool_result");
    assert.match(JSON.stringify(result?.content), /Echo: still there\?/);
  });
});

async function pollUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

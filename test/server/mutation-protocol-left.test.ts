// POST /ag-ui on the node:http door by a client that leaves while its request is prepared (the
// agent still connecting): its run is aborted as it starts, not run to the end for nobody
// (src/server/routes/protocol-post.ts).
import assert from "node:assert/strict";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import { startTestServer } from "./helpers.js";

describe("an AG-UI client gone before its run starts", () => {
  it("the run is aborted as it starts (client disconnected)", async () => {
    // A peer that accepts the connection and never answers: the agent keeps connecting until it is closed.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const peerPort = (silent.address() as AddressInfo).port;
    const model = new ScriptedModel(["Nobody reads this."]);
    const test = await startTestServer(
      { AGENT_NAME: "left", PEER_AGENTS: "mute", PEER_AGENT_MUTE_CARD_URL: `http://127.0.0.1:${peerPort}/.well-known/agent` },
      { readyTimeoutMs: 60_000, build: { model } },
    );
    try {
      // A client tool makes the request wait for the agent's tools (the clash check) before its run.
      const body = JSON.stringify({
        threadId: "left-early",
        runId: "r1",
        state: {},
        messages: [{ id: "u1", role: "user", content: "hi" }],
        tools: [{ name: "pick_color", description: "Asks the person", parameters: { type: "object", properties: {} } }],
        context: [],
        forwardedProps: {},
      });
      const { port } = new URL(test.url);
      const client = connect(Number(port), "127.0.0.1");
      await new Promise<void>((resolve) => client.once("connect", resolve));
      client.end(`POST /ag-ui HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      client.resume();
      // The server closed its side: the request is gone while it waits for the agent.
      await new Promise<void>((resolve) => client.once("close", () => resolve()));
      for (const socket of sockets) socket.destroy();
      const line = await test.waitForLog(/session left-early (ABORTED|COMPLETED)/);
      assert.match(line, /ABORTED: .*\(client disconnected\)$/);
    } finally {
      await test.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

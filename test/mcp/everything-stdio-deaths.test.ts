// A stdio MCP server (the reference "everything" server) that dies: restarted on the next call or in
// the background, up to maxReconnects; calls in flight and after the limit are error results.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { connectMcp } from "../../src/mcp/index.js";
import { everythingStdio, waitFor } from "./helpers.js";
import { execute } from "./tool-context.js";

describe("a stdio server that dies", () => {
  test("with maxReconnects 1: restarted once; after the second death calls return error results naming the server", async () => {
    const toolset = await connectMcp({ name: "everything", ...everythingStdio(), allowedTools: ["echo"], maxReconnects: 1 });
    try {
      const tools = await toolset.tools();
      const firstPid = toolset.pid!;
      assert.ok(firstPid > 0);
      process.kill(firstPid, "SIGKILL");
      await waitFor(() => toolset.status === "disconnected", 5000, "the toolset to notice the exit");

      // Three calls at once share one reconnection.
      const results = await Promise.all(["a", "b", "c"].map((message) => execute(tools, "everything.echo", { message })));
      assert.deepEqual(
        results.map((result) => result.content),
        ["Echo: a", "Echo: b", "Echo: c"],
      );
      assert.equal(toolset.reconnects, 1);
      const secondPid = toolset.pid!;
      assert.notEqual(secondPid, firstPid);

      process.kill(secondPid, "SIGKILL");
      await waitFor(() => toolset.status === "disconnected", 5000, "the toolset to notice the second exit");
      const failed = await execute(tools, "everything.echo", { message: "third" });
      assert.equal(failed.isError, true);
      assert.match(failed.content as string, /MCP server "everything" is unavailable/);
      assert.match(failed.content as string, /reconnect limit 1/);
      assert.equal(toolset.status, "failed");
      // Later calls fail fast the same way; nothing throws.
      assert.equal((await execute(tools, "everything.echo", { message: "fourth" })).isError, true);
    } finally {
      await toolset.close();
    }
  });

  test("by default it is restarted after every death, for as long as the process lives", async () => {
    const toolset = await connectMcp({ name: "everything", ...everythingStdio(), allowedTools: ["echo"] });
    try {
      const pids = new Set<number>();
      for (let death = 1; death <= 3; death++) {
        pids.add(toolset.pid!);
        process.kill(toolset.pid!, "SIGKILL");
        await waitFor(() => toolset.status === "disconnected", 5000, `the toolset to notice death ${death}`);
        assert.equal((await toolset.callTool("echo", { message: `life ${death + 1}` })).content, `Echo: life ${death + 1}`);
      }
      assert.equal(toolset.reconnects, 3);
      assert.equal(pids.size, 3);
    } finally {
      await toolset.close();
    }
  });

  test("a dead server with no calls is restarted in the background", async () => {
    const toolset = await connectMcp({ name: "everything", ...everythingStdio(), allowedTools: ["echo"], reconnectDelayMs: 50 });
    try {
      const firstPid = toolset.pid!;
      const version = toolset.toolsVersion;
      process.kill(firstPid, "SIGKILL");
      await waitFor(() => toolset.status === "connected" && toolset.pid !== firstPid, 15_000, "the background reconnection");
      assert.equal(toolset.reconnects, 1);
      assert.ok(toolset.toolsVersion > version, "the tool list was loaded again");
    } finally {
      await toolset.close();
    }
  });

  test("maxReconnects 0 turns the first death into error results", async () => {
    const toolset = await connectMcp({ name: "fragile", ...everythingStdio(), maxReconnects: 0 });
    try {
      process.kill(toolset.pid!, "SIGKILL");
      await waitFor(() => toolset.status === "disconnected");
      const result = await toolset.callTool("echo", { message: "x" });
      assert.equal(result.isError, true);
      assert.match(result.content as string, /MCP server "fragile" is unavailable/);
    } finally {
      await toolset.close();
    }
  });

  test("a call in flight when the server dies returns an error result, and the next call reconnects", async () => {
    const toolset = await connectMcp({ name: "everything", ...everythingStdio() });
    try {
      // The first progress notification proves the call is running on the server: kill it then.
      let reached: () => void = () => {};
      const running = new Promise<void>((resolve) => (reached = resolve));
      const pending = toolset.callTool("trigger-long-running-operation", { duration: 20, steps: 200 }, { onProgress: () => reached() });
      await running;
      process.kill(toolset.pid!, "SIGKILL");
      const result = await pending;
      assert.equal(result.isError, true);
      assert.match(result.content as string, /MCP server "everything": connection lost during the call to "trigger-long-running-operation"/);
      assert.equal((await toolset.callTool("echo", { message: "back" })).content, "Echo: back");
      assert.equal(toolset.reconnects, 1);
    } finally {
      await toolset.close();
    }
  });
});

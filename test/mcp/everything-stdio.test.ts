// The reference "everything" MCP server over stdio: tools, results, progress, abort, naming, timeouts, close
// (a server that dies: everything-stdio-deaths.test.ts).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import type { ImagePart } from "../../src/messages.js";
import { connectMcp, type McpToolset, mcpToolset } from "../../src/mcp/index.js";
import type { Tool } from "../../src/tools/tool.js";
import { everythingStdio, isAlive, waitFor } from "./helpers.js";
import { execute, find, toolContext } from "./tool-context.js";

describe("everything server over stdio", () => {
  let toolset: McpToolset;
  let tools: Tool[];

  before(async () => {
    toolset = await connectMcp({ name: "everything", ...everythingStdio(), env: { AGENTLOOP_MCP_TEST: "from-config" } });
    tools = await toolset.tools();
  });
  after(() => toolset.close());

  test("lists tools as core tools named <server>.<tool> with kind mcp and the MCP input schema", () => {
    const sum = find(tools, "everything.get-sum");
    assert.equal(sum.kind, "mcp");
    assert.equal(sum.description, "Returns the sum of two numbers");
    const schema = sum.parameters as { type: string; properties: Record<string, unknown>; required: string[] };
    assert.equal(schema.type, "object");
    assert.deepEqual(Object.keys(schema.properties).sort(), ["a", "b"]);
    assert.deepEqual(schema.required, ["a", "b"]);
    // Task-only tools cannot be called with tools/call, so they are not exposed.
    assert.equal(
      tools.some((tool) => tool.name === "everything.simulate-research-query"),
      false,
    );
  });

  test("calls echo and get-sum", async () => {
    assert.deepEqual(await execute(tools, "everything.echo", { message: "hi there" }), { content: "Echo: hi there", isError: false });
    assert.deepEqual(await execute(tools, "everything.get-sum", { a: 2, b: 40 }), { content: "The sum of 2 and 40 is 42.", isError: false });
  });

  test("keeps structuredContent as structured", async () => {
    const result = await execute(tools, "everything.get-structured-content", { location: "New York" });
    assert.equal(result.isError, false);
    assert.deepEqual(result.structured, { temperature: 33, conditions: "Cloudy", humidity: 82 });
    assert.deepEqual(JSON.parse(result.content as string), result.structured);
  });

  test("maps an image result to an image part between the text parts", async () => {
    const result = await execute(tools, "everything.get-tiny-image", {});
    assert.ok(Array.isArray(result.content));
    assert.deepEqual(
      result.content.map((part) => part.type),
      ["text", "image", "text"],
    );
    const image = result.content[1] as ImagePart;
    assert.equal(image.mediaType, "image/png");
    assert.ok(Buffer.from(image.data!, "base64").subarray(1, 4).toString() === "PNG");
  });

  test("an invalid argument comes back as an error result and the connection stays usable", async () => {
    const result = await execute(tools, "everything.get-sum", { a: 1, b: "two" });
    assert.equal(result.isError, true);
    assert.match(result.content as string, /expected number/);
    assert.equal((await execute(tools, "everything.echo", { message: "still here" })).content, "Echo: still here");
    assert.equal(toolset.status, "connected");
  });

  test("an unknown tool is an error result naming the server and the tool", async () => {
    const result = await toolset.callTool("no-such-tool", {});
    assert.equal(result.isError, true);
    assert.match(result.content as string, /no-such-tool/);
  });

  test("passes env to the server process", async () => {
    const result = await execute(tools, "everything.get-env", {});
    assert.equal(JSON.parse(result.content as string).AGENTLOOP_MCP_TEST, "from-config");
  });

  test("forwards progress notifications and aborts with the run's signal", async () => {
    const controller = new AbortController();
    const context = toolContext({
      signal: controller.signal,
      progress(data) {
        context.progressEvents.push(data);
        controller.abort("user pressed stop");
      },
    });
    const started = Date.now();
    await assert.rejects(
      Promise.resolve(find(tools, "everything.trigger-long-running-operation").execute({ duration: 20, steps: 100 }, context)),
      (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted" && /user pressed stop/.test(error.message),
    );
    assert.ok(Date.now() - started < 5000, "the abort ended the call long before the 20 s operation");
    assert.deepEqual(context.progressEvents[0], { progress: 1, total: 100, message: undefined });
    assert.equal((await execute(tools, "everything.echo", { message: "after abort" })).content, "Echo: after abort");
  });

  test("an already aborted signal does not call the server", async () => {
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      Promise.resolve(find(tools, "everything.echo").execute({ message: "x" }, toolContext({ signal: controller.signal }))),
      (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted",
    );
  });
});

describe("naming and allowedTools", () => {
  test("allowedTools keeps only the listed server tools; prefix and separator are configurable", async () => {
    const toolset = await connectMcp({
      name: "everything",
      ...everythingStdio(),
      allowedTools: ["echo", "get-sum"],
      naming: { prefix: "ev", separator: "__" },
    });
    try {
      const tools = await toolset.tools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), ["ev__echo", "ev__get-sum"]);
      assert.equal((await execute(tools, "ev__echo", { message: "x" })).content, "Echo: x");
    } finally {
      await toolset.close();
    }
  });

  test("prefix false exposes the server's names; a predicate filters too", async () => {
    const toolset = mcpToolset({
      name: "everything",
      ...everythingStdio(),
      allowedTools: (name) => name.startsWith("get-s"),
      naming: { prefix: false },
    });
    try {
      assert.equal(toolset.status, "idle");
      const tools = await toolset.tools();
      assert.equal(toolset.status, "connected");
      assert.deepEqual(tools.map((tool) => tool.name).sort(), ["get-structured-content", "get-sum"]);
    } finally {
      await toolset.close();
    }
  });
});

describe("timeouts", () => {
  test("a request slower than requestTimeoutMs is an error result naming the server and the tool; the connection stays usable", async () => {
    // The handshake has its own (default) limit, so a slow start on a busy machine does not count.
    const toolset = await connectMcp({ name: "everything", ...everythingStdio(), requestTimeoutMs: 300 });
    try {
      // One step: the only progress notification comes at the end (after 1 s, whatever the load),
      // so nothing resets the timeout; the short operation lets close() end the server quickly.
      const result = await toolset.callTool("trigger-long-running-operation", { duration: 1, steps: 1 });
      assert.equal(result.isError, true);
      assert.match(result.content as string, /^MCP server "everything", tool "trigger-long-running-operation": .*timed out/i);
      assert.equal(toolset.status, "connected");
      assert.equal((await toolset.callTool("echo", { message: "on time" })).content, "Echo: on time");
    } finally {
      await toolset.close();
    }
  });
});

describe("close", () => {
  test("terminates the stdio child; later calls are error results", async () => {
    const toolset = await connectMcp({ name: "everything", ...everythingStdio() });
    const pid = toolset.pid!;
    assert.ok(isAlive(pid));
    await toolset.close();
    await waitFor(() => !isAlive(pid), 5000, "the server process to exit");
    assert.equal(toolset.status, "closed");
    const result = await toolset.callTool("echo", { message: "x" });
    assert.equal(result.isError, true);
    assert.match(result.content as string, /closed/);
    await assert.rejects(toolset.connect(), /MCP server "everything": toolset is closed/);
    await toolset.close();
  });
});

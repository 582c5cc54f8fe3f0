import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { Agent } from "../../src/loop/agent.js";
import { connectMcp } from "../../src/mcp/index.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { injectTraceHeaders, otelInstrumentation } from "../../src/tracing/index.js";
import { freePort, startEverythingHttp } from "../mcp/helpers.js";
import { memoryTracer, spanNamed } from "./helpers.js";

test("an MCP tool over HTTP sends the traceparent of its execute_tool span", async () => {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  const { exporter, tracer } = memoryTracer();
  const port = await freePort();
  const everything = await startEverythingHttp(port);
  const toolCallTraceparents: string[] = [];
  // A pass-through proxy in front of the real server, recording the traceparent of tools/call requests.
  const proxy = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (body.toString().includes('"tools/call"')) toolCallTraceparents.push(String(request.headers.traceparent));
    const upstream = await fetch(`http://127.0.0.1:${port}${request.url}`, {
      method: request.method,
      headers: Object.fromEntries(Object.entries(request.headers).filter(([key]) => key !== "host" && key !== "content-length")) as Record<string, string>,
      body: request.method === "POST" ? body : undefined,
    });
    response.writeHead(upstream.status, Object.fromEntries(upstream.headers));
    response.end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const address = proxy.address();
  const proxyPort = typeof address === "object" && address ? address.port : 0;
  const toolset = await connectMcp({ name: "remote", url: `http://127.0.0.1:${proxyPort}`, allowedTools: ["echo"], headers: () => injectTraceHeaders() });
  try {
    const agent = new Agent({
      name: "traced",
      model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "e1", name: "remote.echo", arguments: { message: "hi" } }] }), "done"]),
      tools: await toolset.tools(),
      instrumentation: otelInstrumentation({ tracer }),
    });
    assert.equal((await agent.run("go")).state, "COMPLETED");
    const span = spanNamed(exporter.getFinishedSpans(), "execute_tool remote.echo");
    assert.equal(span.attributes["gen_ai.tool.type"], "extension");
    assert.equal(span.attributes["agentloop.tool.kind"], "mcp");
    const { traceId, spanId } = span.spanContext();
    assert.deepEqual(toolCallTraceparents, [`00-${traceId}-${spanId}-01`]);
  } finally {
    await toolset.close();
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
    await everything.stop();
    contextManager.disable();
  }
});

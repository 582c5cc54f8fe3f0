import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { kaosAgentTool } from "../../src/agents/index.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import type { Tool } from "../../src/tools/tool.js";
import { otelInstrumentation } from "../../src/tracing/index.js";
import { memoryTracer, spanNamed } from "../tracing/helpers.js";
import { toolContext } from "../mcp/tool-context.js";

interface Received {
  method?: string;
  url?: string;
  headers: IncomingMessage["headers"];
  body: any;
}

let server: Server;
let baseUrl: string;
const received: Received[] = [];
/** What the server does for a path: the tests pick the behaviour by the URL prefix. */
const behaviours: Record<string, (request: Received, response: ServerResponse) => void> = {
  "/ok": (request, response) => {
    const task = request.body.messages.at(-1).content;
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: `Worker finished: ${task}` } }] }));
  },
  "/fail": (_request, response) => {
    response.writeHead(503, { "content-type": "text/plain" });
    response.end("model backend unavailable");
  },
  "/html": (_request, response) => {
    response.writeHead(200, { "content-type": "text/html" });
    response.end("<html>hello</html>");
  },
  "/empty": (_request, response) => {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ choices: [] }));
  },
  "/slow": () => {
    // never answers: the timeout or the abort ends the call
  },
};

before(async () => {
  server = createServer((request, response) => {
    let data = "";
    request.on("data", (chunk) => (data += chunk));
    request.on("end", () => {
      const entry: Received = { method: request.method, url: request.url, headers: request.headers, body: data ? JSON.parse(data) : undefined };
      received.push(entry);
      const prefix = Object.keys(behaviours).find((key) => request.url?.startsWith(key));
      if (prefix) behaviours[prefix](entry, response);
      else {
        response.writeHead(404);
        response.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function delegateOnce(tool: Tool<{ task: string }>, task = "summarize the logs", runOptions = {}) {
  const lead = new Agent({
    name: "lead",
    model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "call_1", name: tool.name, arguments: { task } }] }), "All done."]),
    tools: [tool],
  });
  const events: LoopEvent[] = [];
  const run = lead.run("go", runOptions);
  for await (const event of run) events.push(event);
  const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
  return { end, events, result: await run };
}

describe("kaosAgentTool", () => {
  it("POSTs the context messages plus the task-delegation message and answers from choices[0].message.content", async () => {
    received.length = 0;
    const tool = kaosAgentTool({
      name: "worker",
      url: `${baseUrl}/ok/`,
      description: "A remote worker.",
      contextMessages: [
        { role: "user", content: "old question" },
        { role: "assistant", content: "old answer" },
        { role: "user", content: "the logs are in /var/log" },
      ],
      maxContextMessages: 2,
      headers: { authorization: "Bearer secret" },
    });
    assert.equal(tool.name, "delegate_to_worker");
    assert.equal(tool.description, "A remote worker.");
    assert.equal(tool.action, "delegate");
    const services = { traceHeaders: () => ({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }) };
    const { end, result } = await delegateOnce(tool, "summarize the logs", { services });
    assert.equal(result.text, "All done.");
    assert.equal(end.isError, false);
    assert.equal(end.output, "Worker finished: summarize the logs");
    assert.equal(received.length, 1);
    const [request] = received;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/ok/v1/chat/completions");
    assert.equal(request.headers["content-type"], "application/json");
    assert.equal(request.headers.authorization, "Bearer secret");
    assert.equal(request.headers.traceparent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    assert.deepEqual(request.body, {
      model: "worker",
      stream: true,
      messages: [
        { role: "assistant", content: "old answer" },
        { role: "user", content: "the logs are in /var/log" },
        { role: "task-delegation", content: "summarize the logs" },
      ],
    });
  });

  it("with otelInstrumentation, the request carries the traceparent of its execute_tool span", async () => {
    received.length = 0;
    const { exporter, tracer } = memoryTracer();
    const tool = kaosAgentTool({ name: "worker", url: `${baseUrl}/ok` });
    const lead = new Agent({
      name: "lead",
      model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "call_1", name: tool.name, arguments: { task: "traced" } }] }), "ok"]),
      tools: [tool],
      instrumentation: otelInstrumentation({ tracer }),
    });
    assert.equal((await lead.run("go")).state, "COMPLETED");
    const { traceId, spanId } = spanNamed(exporter.getFinishedSpans(), "execute_tool delegate_to_worker").spanContext();
    assert.equal(received[0].headers.traceparent, `00-${traceId}-${spanId}-01`);
  });

  it("reads context messages from a function of the tool context", async () => {
    received.length = 0;
    const tool = kaosAgentTool({
      name: "worker",
      url: `${baseUrl}/ok`,
      contextMessages: (context) => [{ role: "user", content: `run ${context.runId.startsWith("run_") ? "ok" : "?"}` }],
    });
    const { end } = await delegateOnce(tool, "task");
    assert.equal(end.output, "Worker finished: task");
    assert.deepEqual(received[0].body.messages, [
      { role: "user", content: "run ok" },
      { role: "task-delegation", content: "task" },
    ]);
  });

  it("reports an HTTP error status as [Delegation failed: ...]", async () => {
    const { end, result } = await delegateOnce(kaosAgentTool({ name: "worker", url: `${baseUrl}/fail` }));
    assert.equal(result.state, "COMPLETED");
    assert.equal(end.isError, true);
    assert.equal(end.output, `[Delegation failed: HTTP 503 from ${baseUrl}/fail/v1/chat/completions: model backend unavailable]`);
  });

  it("reports a body that is not JSON and a body without content", async () => {
    const html = await delegateOnce(kaosAgentTool({ name: "worker", url: `${baseUrl}/html` }));
    assert.equal(html.end.output, `[Delegation failed: the response from ${baseUrl}/html/v1/chat/completions is not JSON: <html>hello</html>]`);
    const empty = await delegateOnce(kaosAgentTool({ name: "worker", url: `${baseUrl}/empty` }));
    assert.equal(empty.end.output, `[Delegation failed: the response from ${baseUrl}/empty/v1/chat/completions has no choices[0].message.content]`);
    assert.equal(empty.end.isError, true);
  });

  it("reports a refused connection", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const { end } = await delegateOnce(kaosAgentTool({ name: "worker", url: `http://127.0.0.1:${port}` }));
    assert.equal(end.isError, true);
    assert.match(end.output, /^\[Delegation failed: fetch failed: .*ECONNREFUSED.*\]$/);
  });

  it("gives up after timeoutMs", async () => {
    const { end } = await delegateOnce(kaosAgentTool({ name: "worker", url: `${baseUrl}/slow`, timeoutMs: 100 }));
    assert.equal(end.output, `[Delegation failed: no answer from ${baseUrl}/slow/v1/chat/completions within 100 ms]`);
  });

  it("stops when the run is aborted", async () => {
    const controller = new AbortController();
    const tool = kaosAgentTool({ name: "worker", url: `${baseUrl}/slow` });
    const pending = tool.execute(
      { task: "wait" },
      toolContext({ signal: controller.signal, runId: "run_x", toolCallId: "c", idempotencyKey: "run_x:c", toolName: tool.name, agentPath: ["lead"] }),
    );
    setTimeout(() => controller.abort("user stopped"), 30);
    assert.deepEqual(await pending, { content: "[Delegation failed: aborted (user stopped)]", isError: true });
  });

  it("rejects a bad URL and an empty task", async () => {
    assert.throws(() => kaosAgentTool({ name: "worker", url: "not a url" }), /"not a url" is not a valid URL/);
    assert.throws(() => kaosAgentTool({ name: "", url: baseUrl }), /a name is required/);
    assert.throws(() => kaosAgentTool({ name: "worker" } as never), /kaosAgentTool: agent "worker" needs a url/);
    const { end } = await delegateOnce(kaosAgentTool({ name: "worker", url: `${baseUrl}/ok` }), " ");
    assert.equal(end.output, '[Delegation failed: delegation to "worker" needs a non-empty "task" string]');
  });
});

describe("kaosAgentTool default context", () => {
  it("sends the calling run's user and assistant text before the task-delegation message", async () => {
    const worker = kaosAgentTool({ name: "worker", url: `${baseUrl}/ok-context` });
    const model = new ScriptedModel([
      JSON.stringify({ tool_calls: [{ id: "c1", name: "delegate_to_worker", arguments: { task: "process data" } }] }),
      "Done.",
    ]);
    const agent = new Agent({ name: "lead", instructions: "system text is not sent", model, tools: [worker] });
    const history = [
      { role: "user" as const, content: "I have data" },
      { role: "assistant" as const, content: [{ type: "text" as const, text: "Sure, tell me more." }] },
    ];
    const second = await agent.run("please process it", { history });
    assert.equal(second.state, "COMPLETED");
    const request = received.findLast((entry) => entry.url?.startsWith("/ok-context"));
    assert.deepEqual(request?.body.messages, [
      { role: "user", content: "I have data" },
      { role: "assistant", content: "Sure, tell me more." },
      { role: "user", content: "please process it" },
      { role: "task-delegation", content: "process data" },
    ]);
  });
});

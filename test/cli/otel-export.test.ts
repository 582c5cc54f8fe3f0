// `agentloop run|serve` export their traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: real child processes, a real OTLP/HTTP receiver on
// 127.0.0.1 that decodes what it gets (OTLP JSON) and checks span names and attributes.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { otlpTracesEndpoint } from "../../src/cli/otel.js";
import { cleanEnv, runCli, spawnCli } from "./helpers.js";

interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  status?: { code?: number };
  service: unknown;
}

type OtlpAttribute = { key: string; value: Record<string, unknown> };

function attributeValue(value: Record<string, unknown>): unknown {
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return value.doubleValue;
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value) return ((value.arrayValue as { values?: Array<Record<string, unknown>> }).values ?? []).map(attributeValue);
  return value;
}

const attributes = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map(({ key, value }) => [key, attributeValue(value)]));

/** An OTLP/HTTP trace receiver: decodes each POST /v1/traces (JSON) into spans. */
class Receiver {
  readonly spans: ReceivedSpan[] = [];
  readonly paths: string[] = [];
  private server?: Server;
  private waiters: Array<() => void> = [];
  url = "";

  async start(): Promise<void> {
    this.server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      this.paths.push(`${request.method} ${request.url} ${request.headers["content-type"]}`);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = attributes(resourceSpans.resource?.attributes)["service.name"];
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            this.spans.push({ ...span, attributes: attributes(span.attributes), service, parentSpanId: span.parentSpanId || undefined });
          }
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
      for (const wake of this.waiters.splice(0)) wake();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves once a span with this name has arrived. */
  async waitFor(name: string, timeoutMs = 20_000): Promise<ReceivedSpan> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const span = this.spans.find((candidate) => candidate.name === name);
      if (span) return span;
      if (Date.now() > deadline) throw new Error(`no span "${name}" arrived; got ${this.spans.map((s) => s.name).join(", ") || "none"}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 500);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  named(name: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.name === name);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }
}

const receiver = new Receiver();
before(() => receiver.start());
after(() => receiver.close());

const holidayCall = JSON.stringify({ tool_calls: [{ name: "calendar.resolve_holiday", arguments: { holiday_name: "Hanukkah" } }] });

describe("OTLP trace export from the CLI", () => {
  test("agentloop run: invoke_agent, chat and execute_tool spans reach the collector before the process exits", async () => {
    const result = await runCli(
      ["run", "When is Hanukkah?", "--mock", JSON.stringify([holidayCall, "It starts on December 4."])],
      cleanEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`, OTEL_SERVICE_NAME: "cli-run-test" }),
    );
    assert.equal(result.code, 0, result.stderr);
    // Everything was flushed before the exit: nothing to wait for.
    const runSpans = receiver.spans.filter((span) => span.service === "cli-run-test");
    const run = runSpans.find((span) => span.name.startsWith("invoke_agent "));
    assert.ok(run, `spans: ${runSpans.map((span) => span.name).join(", ")}`);
    assert.equal(run.attributes["gen_ai.operation.name"], "invoke_agent");
    assert.equal(run.attributes["agentloop.run.state"], "COMPLETED");
    assert.equal(run.parentSpanId, undefined);
    const chats = runSpans.filter((span) => span.name === "chat scripted");
    assert.equal(chats.length, 2);
    const tool = runSpans.find((span) => span.name === "execute_tool calendar.resolve_holiday");
    assert.ok(tool);
    assert.equal(tool.attributes["gen_ai.tool.name"], "calendar.resolve_holiday");
    for (const span of [...chats, tool]) {
      assert.equal(span.traceId, run.traceId);
      assert.equal(span.parentSpanId, run.spanId);
    }
    assert.ok(receiver.paths.includes("POST /v1/traces application/json"), receiver.paths.join("; "));
  });

  test("agentloop serve: a chat request's spans are exported, and flushed on SIGTERM", async () => {
    const lookupCall = JSON.stringify({ tool_calls: [{ name: "lookup", arguments: { q: "x" } }] });
    const cli = spawnCli(
      ["serve", "--port", "0", "--host", "127.0.0.1", "--json"],
      cleanEnv({
        MEMORY_TYPE: "memory",
        AGENT_NAME: "traced-server",
        DEBUG_MOCK_RESPONSES: JSON.stringify([lookupCall, "Served."]),
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
        OTEL_SERVICE_NAME: "cli-serve-test",
        // The batch would wait 5 s; SIGTERM must flush it anyway.
        OTEL_BSP_SCHEDULE_DELAY: "60000",
      }),
    );
    try {
      const [, url] = (await cli.waitFor(/"event":"listening".*"url":"([^"]+)"/)) as RegExpMatchArray;
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "traced-server", messages: [{ role: "user", content: "hi" }] }),
      });
      assert.equal(response.status, 200);
      const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
      assert.match(body.choices[0]!.message.content, /Served\./);
      cli.child.kill("SIGTERM");
      const exit = await cli.exited;
      assert.equal(exit.code, 0, cli.stderr());
    } finally {
      cli.child.kill("SIGKILL");
    }
    const spans = receiver.spans.filter((span) => span.service === "cli-serve-test");
    const run = spans.find((span) => span.name === "invoke_agent traced-server");
    assert.ok(run, `spans: ${spans.map((span) => span.name).join(", ")}`);
    assert.equal(run.attributes["gen_ai.agent.name"], "traced-server");
    const tool = spans.find((span) => span.name === "execute_tool lookup");
    assert.ok(tool);
    // The model asked for a tool the agent does not have: an error span, the run goes on.
    assert.equal(tool.status?.code, 2);
    assert.equal(tool.attributes["error.type"], "unknown_tool");
    assert.equal(tool.parentSpanId, run.spanId);
  });

  test("a collector that cannot be reached costs a warning on stderr (connection refused), not the run, and no wait at exit", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    // The exporter's default timeout (10 s), during which it would retry the refused connection.
    const cli = spawnCli(["run", "Hi", "--mock", '["Hello!"]'], cleanEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` }));
    cli.child.stdin.end();
    await cli.waitFor(/COMPLETED/, "stderr");
    const answered = performance.now();
    const { code } = await cli.exited;
    const exitMs = performance.now() - answered;
    assert.equal(code, 0, cli.stderr());
    assert.match(cli.stdout(), /Hello!/);
    assert.match(cli.stderr(), new RegExp(`agentloop: traces not exported to http://127\\.0\\.0\\.1:${port}/v1/traces: connection refused \\(nothing listens at 127\\.0\\.0\\.1:${port}\\)\n`));
    // The flush limit (5 s) was waited out before; a refused connection is known at once.
    assert.ok(exitMs < 2500, `exited ${Math.round(exitMs)} ms after the answer`);
  });

  test("which endpoint the variables name", () => {
    assert.equal(otlpTracesEndpoint({}), undefined);
    assert.equal(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }), "http://collector:4318/v1/traces");
    assert.equal(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }), "http://collector:4318/v1/traces");
    assert.equal(
      otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:9999/custom" }),
      "http://traces:9999/custom",
    );
    assert.equal(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }), undefined);
    assert.equal(otlpTracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" }), undefined);
  });

  test("an endpoint that is not a URL is named on stderr; the run goes on", async () => {
    const result = await runCli(["run", "Hi", "--mock", '["Hello!"]'], cleanEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" }));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /agentloop: traces not exported: the OTLP endpoint "collector:4318" is not an http\(s\) URL/);
  });
});

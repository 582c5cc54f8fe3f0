// OTLP/HTTP trace export for `agentloop run|chat|serve`, switched on by the standard OpenTelemetry
// variables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL) or OTEL_EXPORTER_OTLP_ENDPOINT (the
// collector's base URL; `/v1/traces` is added). The official exporter reads the rest itself
// (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, …; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the service). Nothing here is loaded unless a variable is set: the
// SDK is imported lazily, registered as the global tracer provider (the runs then trace themselves,
// see src/loop/global-tracing.ts), and flushed before the command exits.

import { connect } from "node:net";

export type TraceEnv = Record<string, string | undefined>;

/** Where spans go, or undefined when no OTLP endpoint is configured (or the SDK is disabled). */
export function otlpTracesEndpoint(env: TraceEnv = process.env): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (base) return `${base.replace(/\/+$/, "")}/v1/traces`;
  return undefined;
}

/** Longest a command waits at exit for its spans to reach the collector. */
const FLUSH_LIMIT_MS = 5_000;

/**
 * Resolves when nothing listens at the URL's host and port (a refused connection is known at once),
 * never otherwise. The exporter retries a refused connection for up to its timeout; at exit there
 * is no point in waiting for that.
 */
function whenRefused(url: string): Promise<"refused"> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const socket = connect({ host: target.hostname.replace(/^\[|\]$/g, ""), port: Number(target.port || (target.protocol === "https:" ? 443 : 80)) });
    socket.unref();
    socket.once("connect", () => socket.destroy());
    socket.once("error", (error: NodeJS.ErrnoException) => {
      socket.destroy();
      if (error.code === "ECONNREFUSED") resolve("refused");
    });
  });
}

/**
 * Starts exporting traces when an OTLP endpoint is configured; returns the function that flushes
 * and stops the export (also run by itself when the process is about to exit normally), or
 * undefined when tracing is off. A collector that cannot be reached costs a one-line warning on
 * stderr, never the command.
 */
export async function startTraceExport(
  env: TraceEnv = process.env,
  stderr: { write(text: string): unknown } = process.stderr,
): Promise<(() => Promise<void>) | undefined> {
  const url = otlpTracesEndpoint(env);
  if (!url) return undefined;
  if (!/^https?:$/.test(URL.parse(url)?.protocol ?? "")) {
    stderr.write(`agentloop: traces not exported: the OTLP endpoint "${url}" is not an http(s) URL\n`);
    return undefined;
  }
  const [{ OTLPTraceExporter }, { NodeTracerProvider, BatchSpanProcessor }, { defaultResource, detectResources, envDetector, resourceFromAttributes }] =
    await Promise.all([import("@opentelemetry/exporter-trace-otlp-http"), import("@opentelemetry/sdk-trace-node"), import("@opentelemetry/resources")]);
  const exporter = new OTLPTraceExporter({ url });
  let warned = false;
  const send = exporter.export.bind(exporter);
  exporter.export = (spans, done) =>
    send(spans, (result) => {
      if (result.code !== 0 && !warned) {
        warned = true;
        stderr.write(`agentloop: traces not exported to ${url}: ${result.error?.message ?? "export failed"}\n`);
      }
      done(result);
    });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": "agentloop" }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  // The global tracer provider, the AsyncLocalStorage context manager and W3C trace propagation.
  provider.register();

  let stopping: Promise<boolean> | undefined;
  /** Flushes and stops the export; true when it was given up (nothing listens, or no answer in time). */
  const stop = (): Promise<boolean> => {
    stopping ??= (async () => {
      process.off("beforeExit", atExit);
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), FLUSH_LIMIT_MS);
        timer.unref();
      });
      const outcome = await Promise.race([provider.shutdown().then(() => "done" as const, () => "done" as const), limit, whenRefused(url)]);
      clearTimeout(timer);
      if (outcome !== "done" && !warned) {
        warned = true;
        const { host } = new URL(url);
        stderr.write(`agentloop: traces not exported to ${url}: ${outcome === "refused" ? `connection refused (nothing listens at ${host})` : `no answer within ${FLUSH_LIMIT_MS} ms`}\n`);
      }
      return outcome !== "done";
    })();
    return stopping;
  };
  // A command that ends by itself (run, chat) flushes once nothing else is left to do; if nothing
  // listens, or the collector is still retrying after the limit, the process exits anyway (with its exit code).
  const atExit = () => {
    void stop().then((late) => {
      if (late) process.exit();
    });
  };
  process.on("beforeExit", atExit);
  return async () => {
    await stop();
  };
}

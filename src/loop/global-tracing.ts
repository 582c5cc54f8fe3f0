// Tracing without extra code: when an OpenTelemetry tracer provider is registered globally (an SDK's
// `provider.register()`, `trace.setGlobalTracerProvider`, the Node SDK's `start()`), runs of agents
// built without `instrumentation` are traced through `agentloop/tracing`. The core does not import
// `@opentelemetry/api` to find out: it reads the API's global registry (a well-known symbol on
// `globalThis`) and loads the tracing module only once a provider is there.
import type { Instrumentation } from "./types.js";

/** Where `@opentelemetry/api` 1.x keeps its global registrations (tracer provider, context manager…). */
const OTEL_API_GLOBAL = Symbol.for("opentelemetry.js.api.1");

let loading: Promise<Instrumentation> | undefined;
let loaded: Instrumentation | undefined;

/** True when a tracer provider is registered with the global OpenTelemetry API. */
export function globalTracerProviderRegistered(): boolean {
  const api = (globalThis as Record<symbol, unknown>)[OTEL_API_GLOBAL] as { trace?: unknown } | undefined;
  return typeof api === "object" && api !== null && api.trace !== undefined;
}

/**
 * The instrumentation a run uses: the configured one; none for `false`; otherwise, when a tracer
 * provider is registered globally, the OpenTelemetry instrumentation (one for the process, loaded on
 * first use, so sub-agent runs nest under their caller's spans); else none.
 */
export function resolveInstrumentation(configured: Instrumentation | false | undefined): Instrumentation | undefined | Promise<Instrumentation> {
  if (configured !== undefined) return configured === false ? undefined : configured;
  if (!globalTracerProviderRegistered()) return undefined;
  if (loaded) return loaded;
  loading ??= import("../tracing/instrumentation.js").then(({ otelInstrumentation }) => {
    loaded = otelInstrumentation();
    return loaded;
  });
  return loading;
}

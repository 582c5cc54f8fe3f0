// OpenTelemetry tracing for agent runs: `agentloop/tracing`. Depends only on `@opentelemetry/api`;
// the SDK, exporter and context manager are the application's choice.
export { type OtelInstrumentationOptions, otelInstrumentation, TRACER_NAME } from "./instrumentation.js";
export { extractTraceContext, injectTraceHeaders } from "./propagation.js";
export { isSensitiveKey, REDACTED, redactSensitive, redactText } from "./redact.js";

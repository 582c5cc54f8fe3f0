import { type Context, context, isSpanContextValid, propagation, TraceFlags, trace } from "@opentelemetry/api";

/**
 * Writes the W3C trace context (`traceparent`, `tracestate`) of `from` (default: the active
 * context) into `headers` and returns them. Uses the registered global propagator; when none is
 * registered (the API's default is a no-op) the `traceparent` header is still written, so remote
 * delegation keeps the trace whatever SDK setup the user chose.
 */
export function injectTraceHeaders(headers: Record<string, string> = {}, from: Context = context.active()): Record<string, string> {
  propagation.inject(from, headers, {
    set(carrier, key, value) {
      carrier[key] = value;
    },
  });
  const hasTraceparent = Object.keys(headers).some((key) => key.toLowerCase() === "traceparent");
  const spanContext = trace.getSpanContext(from);
  if (!hasTraceparent && spanContext && isSpanContextValid(spanContext)) {
    const flags = (spanContext.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, "0");
    headers.traceparent = `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
    const state = spanContext.traceState?.serialize();
    if (state) headers.tracestate = state;
  }
  return headers;
}

type HeaderRecord = Record<string, string | string[] | undefined>;

function headerValue(headers: HeaderRecord, key: string): string | string[] | undefined {
  const direct = headers[key] ?? headers[key.toLowerCase()];
  if (direct !== undefined) return direct;
  const found = Object.keys(headers).find((name) => name.toLowerCase() === key.toLowerCase());
  return found ? headers[found] : undefined;
}

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The context carried by incoming request headers (for a server receiving a delegation), on top
 * of `base` (default: the active context). Uses the registered global propagator; when none is
 * registered, a W3C `traceparent` header is still read.
 */
export function extractTraceContext(headers: HeaderRecord, base: Context = context.active()): Context {
  const extracted = propagation.extract(base, headers, { keys: (carrier) => Object.keys(carrier), get: headerValue });
  if (trace.getSpanContext(extracted) !== trace.getSpanContext(base)) return extracted;
  const raw = headerValue(headers, "traceparent");
  const match = traceparentPattern.exec((Array.isArray(raw) ? raw[0] : raw)?.trim() ?? "");
  if (!match) return extracted;
  const spanContext = { traceId: match[1], spanId: match[2], traceFlags: Number.parseInt(match[3], 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(extracted, spanContext) : extracted;
}

import type { HrTime } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

export function memoryTracer() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, provider, tracer: provider.getTracer("agentloop-test") };
}

/** The span tree as nested `name` lists, children in start order: handy for deepEqual. */
export interface SpanNode {
  name: string;
  children: SpanNode[];
}

function time(value: HrTime): number {
  return value[0] * 1e9 + value[1];
}

export function spanTree(spans: ReadableSpan[]): SpanNode[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const build = (parentId: string | undefined): SpanNode[] =>
    spans
      .filter((span) => {
        const parent = span.parentSpanContext?.spanId;
        return parentId === undefined ? parent === undefined || !ids.has(parent) : parent === parentId;
      })
      .sort((a, b) => time(a.startTime) - time(b.startTime) || a.name.localeCompare(b.name))
      .map((span) => ({ name: span.name, children: build(span.spanContext().spanId) }));
  return build(undefined);
}

/** Names with children sorted by name (parallel spans start in any order). */
export function sortedTree(nodes: SpanNode[]): SpanNode[] {
  return nodes.map((node) => ({ name: node.name, children: sortedTree(node.children) })).sort((a, b) => a.name.localeCompare(b.name));
}

export function spanNamed(spans: ReadableSpan[], name: string): ReadableSpan {
  const span = spans.find((candidate) => candidate.name === name);
  if (!span) throw new Error(`no span named ${name}; got ${spans.map((s) => s.name).join(", ")}`);
  return span;
}

/** The OpenTelemetry SDK stamps a span's start with `Date.now()` (whole milliseconds) and its end as start +
 * a precise duration: two spans' times are comparable only to within a millisecond. Two spans that did
 * overlap can look up to 1 ms apart, so they count as overlapping within that much. */
const CLOCK_RESOLUTION_NS = 1e6;

export function overlaps(a: ReadableSpan, b: ReadableSpan): boolean {
  return time(a.startTime) < time(b.endTime) + CLOCK_RESOLUTION_NS && time(b.startTime) < time(a.endTime) + CLOCK_RESOLUTION_NS;
}

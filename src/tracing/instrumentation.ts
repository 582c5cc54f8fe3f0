import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { RunResult } from "../loop/events.js";
import type { Instrumentation, RunInfo, ToolCallOutcome } from "../loop/types.js";
import type { Message } from "../messages.js";
import type { ModelResponse } from "../model/model.js";
import type { Usage } from "../usage.js";
import { injectTraceHeaders } from "./propagation.js";
import { isSensitiveKey, REDACTED, redactSensitive, redactText } from "./redact.js";

export const TRACER_NAME = "agentloop";
const TRACER_VERSION = "0.1.0";

export interface OtelInstrumentationOptions {
  /**
   * Default: `trace.getTracer("agentloop")` from the globally registered provider, looked up for each
   * span, so a provider registered (or replaced) after the agent was built is the one used.
   */
  tracer?: Tracer;
  /**
   * Record message and tool content (run input and answer, model output, tool arguments and
   * results; sensitive keys redacted). Default: the environment variable
   * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, else off.
   */
  captureContent?: boolean;
  /** Added to every span (sensitive keys are redacted). */
  attributes?: Attributes;
  /** Characters kept of each captured content attribute (default 8,000). */
  maxContentChars?: number;
}

/**
 * Callers that know which tool call started a run or a model call may add its id to the info
 * (the `single` mode of agent and prompty tools does), so spans nest right without a context manager.
 */
export interface ParentToolCall {
  parentToolCallId?: string;
}

/** Span and trace context of a run that is in progress, so model and tool spans find their parent. */
interface ActiveRun {
  context: Context;
  /** Contexts of this run's execute_tool spans still running, newest last. */
  tools: Map<string, Context>;
}

function errorType(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const kind = (error as { kind?: unknown }).kind;
    if (typeof kind === "string") return kind;
    const name = (error as { name?: unknown }).name;
    if (typeof name === "string" && name !== "Error") return name;
  }
  return "_OTHER";
}

function fail(span: Span, type: string, message?: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute("error.type", type);
}

function failWith(span: Span, error: unknown): void {
  if (error instanceof Error) span.recordException(error);
  fail(span, errorType(error), error instanceof Error ? error.message : String(error));
}

/** JSON messages in the GenAI conventions' shape: `[{role, parts: [{type, content}]}]`. */
function conventionMessages(messages: Message[]): unknown[] {
  return messages.map((message) => {
    if (typeof message.content === "string") return { role: message.role, parts: [{ type: "text", content: message.content }] };
    const parts = message.content.map((part) => {
      switch (part.type) {
        case "text":
          return { type: "text", content: part.text };
        case "reasoning":
          return { type: "reasoning", content: part.text };
        case "tool-call":
          return { type: "tool_call", id: part.id, name: part.name, arguments: redactText(part.arguments) };
        default:
          return { type: "image", mime_type: part.mediaType };
      }
    });
    return { role: message.role, parts };
  });
}

/**
 * OpenTelemetry spans for agent runs, following the GenAI semantic conventions:
 * `invoke_agent <agent>` around a run, `chat <model>` per model call and `execute_tool <tool>` per
 * tool call. Each scope runs inside `context.with(...)`, so a sub-agent run inside a tool nests under
 * its `execute_tool` span and remote delegations can propagate the trace (register a context
 * manager, such as the SDK's AsyncLocalStorage one, for that).
 *
 * Tools get `context.services.traceHeaders()`: the W3C headers of their own call.
 */
export function otelInstrumentation(options: OtelInstrumentationOptions = {}): Instrumentation {
  const given = options.tracer;
  const tracerOf = (): Tracer => given ?? trace.getTracer(TRACER_NAME, TRACER_VERSION);
  const captureContent = options.captureContent ?? process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === "true";
  const maxContentChars = options.maxContentChars ?? 8_000;
  const runs = new Map<string, ActiveRun>();

  const safeAttributes = (attributes: Record<string, AttributeValue | undefined>): Attributes => {
    const safe: Attributes = {};
    for (const [key, value] of Object.entries({ ...options.attributes, ...attributes })) {
      if (value === undefined) continue;
      safe[key] = isSensitiveKey(key) ? REDACTED : value;
    }
    return safe;
  };
  const content = (text: string): string => (text.length > maxContentChars ? `${text.slice(0, maxContentChars)}…` : text);

  /**
   * The parent of a run: the active span, or else (no context manager) the parent run's tool call
   * named by `parentToolCallId`, else that run's newest tool call (a guess in a parallel wave).
   */
  const parentOf = (info: RunInfo & ParentToolCall): Context => {
    const active = context.active();
    if (trace.getSpan(active) || !info.parentRunId) return active;
    const parent = runs.get(info.parentRunId);
    if (!parent) return active;
    const named = info.parentToolCallId === undefined ? undefined : parent.tools.get(info.parentToolCallId);
    return named ?? [...parent.tools.values()].at(-1) ?? parent.context;
  };

  const baseAttributes = (info: RunInfo) => ({
    "gen_ai.provider.name": info.model.provider,
    "gen_ai.system": info.model.provider,
    "gen_ai.request.model": info.model.modelId,
    "gen_ai.agent.name": info.agentName,
    "gen_ai.conversation.id": info.sessionId,
    "agentloop.run.id": info.runId,
  });

  return {
    async run(info: RunInfo & ParentToolCall & { input: string }, fn): Promise<RunResult> {
      const parent = parentOf(info);
      const span = tracerOf().startSpan(
        `invoke_agent ${info.agentName}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: safeAttributes({
            ...baseAttributes(info),
            "gen_ai.operation.name": "invoke_agent",
            "agentloop.run.depth": info.depth,
            "agentloop.parent_run.id": info.parentRunId,
            "gen_ai.input.messages": captureContent
              ? content(JSON.stringify([{ role: "user", parts: [{ type: "text", content: info.input }] }]))
              : undefined,
          }),
        },
        parent,
      );
      const runContext = trace.setSpan(parent, span);
      runs.set(info.runId, { context: runContext, tools: new Map() });
      try {
        const result = await context.with(runContext, fn);
        span.setAttributes(
          safeAttributes({
            "agentloop.run.state": result.state,
            "agentloop.run.reason": result.reason,
            "agentloop.run.turns": result.turns,
            "agentloop.run.tool_calls": result.toolCalls,
            "gen_ai.usage.input_tokens": result.usage.inputTokens,
            "gen_ai.usage.output_tokens": result.usage.outputTokens,
            ...cacheAttributes(result.usage),
            "gen_ai.output.messages": captureContent
              ? content(JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: result.text }] }]))
              : undefined,
          }),
        );
        if (result.state === "FAILED") {
          if (result.error) span.recordException(result.error);
          fail(span, result.error ? errorType(result.error) : "FAILED", result.reason);
        }
        return result;
      } catch (error) {
        failWith(span, error);
        throw error;
      } finally {
        runs.delete(info.runId);
        span.end();
      }
    },

    async modelCall(info: RunInfo & ParentToolCall & { turn: number; toolNames: string[] }, fn): Promise<ModelResponse> {
      // A call outside a traced run (a `single` mode sub-agent or prompty child) nests under its caller.
      const parent = runs.get(info.runId)?.context ?? parentOf(info);
      const span = tracerOf().startSpan(
        `chat ${info.model.modelId}`,
        {
          kind: SpanKind.CLIENT,
          attributes: safeAttributes({
            ...baseAttributes(info),
            "gen_ai.operation.name": "chat",
            "agentloop.turn": info.turn,
            "agentloop.request.tool_names": info.toolNames.length ? info.toolNames : undefined,
          }),
        },
        parent,
      );
      try {
        const response = await context.with(trace.setSpan(parent, span), fn);
        span.setAttributes(
          safeAttributes({
            "gen_ai.usage.input_tokens": response.usage.inputTokens,
            "gen_ai.usage.output_tokens": response.usage.outputTokens,
            ...cacheAttributes(response.usage),
            ...fallbackAttributes(response),
            "gen_ai.response.finish_reasons": [response.finishReason.unified],
            "gen_ai.output.messages": captureContent ? content(JSON.stringify(conventionMessages([response.message]))) : undefined,
          }),
        );
        if (response.error) {
          span.recordException(response.error);
          fail(span, errorType(response.error), response.error.message);
        }
        return response;
      } catch (error) {
        failWith(span, error);
        throw error;
      } finally {
        span.end();
      }
    },

    async toolCall(info, fn): Promise<ToolCallOutcome> {
      const active = runs.get(info.runId);
      const parent = active?.context ?? context.active();
      const args = typeof info.arguments === "string" ? redactText(info.arguments) : JSON.stringify(redactSensitive(info.arguments));
      const span = tracerOf().startSpan(
        `execute_tool ${info.toolName}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: safeAttributes({
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": info.toolName,
            "gen_ai.tool.call.id": info.toolCallId,
            "gen_ai.tool.type": info.kind === undefined || info.kind === "function" ? "function" : "extension",
            "gen_ai.agent.name": info.agentName,
            "agentloop.tool.kind": info.kind,
            "agentloop.run.id": info.runId,
            "gen_ai.tool.call.arguments": captureContent ? content(args ?? "") : undefined,
          }),
        },
        parent,
      );
      const toolContext = trace.setSpan(parent, span);
      active?.tools.set(info.toolCallId, toolContext);
      // The remote-delegation contract (see agentloop/agents): `services.traceHeaders()` returns the
      // W3C headers of the calling tool's span (the active one, or this run's newest call without a context manager).
      if (typeof info.services.traceHeaders !== "function") {
        info.services.traceHeaders = () => {
          const current = context.active();
          if (trace.getSpan(current)) return injectTraceHeaders({}, current);
          const fallback = [...(runs.get(info.runId)?.tools.values() ?? [])].at(-1);
          return fallback ? injectTraceHeaders({}, fallback) : {};
        };
      }
      try {
        const outcome = await context.with(toolContext, fn);
        if (captureContent) span.setAttribute("gen_ai.tool.call.result", content(redactText(outcome.output)));
        // The status message carries tool output only when content capture is on.
        if (outcome.isError) fail(span, outcome.errorKind ?? "tool_error", captureContent ? content(redactText(outcome.output)) : undefined);
        return outcome;
      } catch (error) {
        failWith(span, error);
        throw error;
      } finally {
        active?.tools.delete(info.toolCallId);
        span.end();
      }
    },
  };
}

/** Prompt-cache reads and writes, under the GenAI conventions' names (left out when 0), and the cost in US dollars (or "unknown"). */
function cacheAttributes(usage: Usage): Record<string, number | string | undefined> {
  return {
    "gen_ai.usage.cache_read.input_tokens": usage.cachedInputTokens || undefined,
    "gen_ai.usage.cache_creation.input_tokens": usage.cacheWriteInputTokens || undefined,
    "agentloop.usage.cost": usage.cost,
  };
}

/** A call a fallback model handed on: both models (the last hand-over) and why. */
function fallbackAttributes(response: ModelResponse): Record<string, string | undefined> {
  const last = response.fallbacks?.at(-1);
  if (!last) return {};
  return {
    "agentloop.model.fallback.from": response.fallbacks?.[0].from,
    "agentloop.model.fallback.to": last.to,
    "agentloop.model.fallback.reason": last.reason,
  };
}

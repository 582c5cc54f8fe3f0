// The `single` mode shared by agent tools and prompty tools: one model call, no tools, no loop.
import { randomUUID } from "node:crypto";
import { resolveInstrumentation } from "../loop/global-tracing.js";
import type { Instrumentation } from "../loop/types.js";
import type { Message } from "../messages.js";
import { generate, type Model, type ModelOptions, type ModelResponse } from "../model/model.js";

export interface SingleModelCall {
  /** The model (a per-run copy is taken when it offers one). */
  model: Model;
  messages: Message[];
  options?: ModelOptions;
  signal?: AbortSignal;
  /** Name of the agent or prompty making the call (for the trace). */
  agentName: string;
  /** Wraps the call (tracing); without it, traced when a tracer provider is registered globally; `false`: never. */
  instrumentation?: Instrumentation | false;
  /** Depth in the delegation chain, and the calling run and tool call, so the call's span nests under that tool call. */
  depth?: number;
  parentRunId?: string;
  parentToolCallId?: string;
}

/**
 * Makes one model call with no tools and returns the collected response. A failure is the
 * response's `error` (models never throw). With instrumentation the call is one model-call scope of a
 * run of its own, whose parent is `parentRunId`.
 */
export async function singleModelCall(call: SingleModelCall): Promise<ModelResponse> {
  const model = call.model.forRun?.() ?? call.model;
  const request = { messages: call.messages, options: call.options, signal: call.signal };
  const instrumentation = await resolveInstrumentation(call.instrumentation);
  if (!instrumentation) return generate(model, request);
  const info = {
    runId: `run_${randomUUID()}`,
    agentName: call.agentName,
    model,
    depth: call.depth ?? 0,
    parentRunId: call.parentRunId,
    // Read by agentloop/tracing (ParentToolCall): the span's parent without a context manager.
    parentToolCallId: call.parentToolCallId,
    turn: 1,
    toolNames: [],
  };
  return instrumentation.modelCall(info, () => generate(model, request));
}

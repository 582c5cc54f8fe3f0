/**
 * The plan protocol (the hotel agent's wave planner): each turn the model answers one structured
 * plan `{status, action, tools: [{id, tool, args, needs}], reasoning}`; the plan's tools become one
 * wave of parallel tool calls; a plan without tools ends planning and the final response streams.
 */
import { createRequire } from "node:module";
import type { Ajv as AjvClass, ErrorObject, ValidateFunction } from "ajv";
import { AgentLoopError } from "../errors.js";
import type { AssistantMessage, Message, ToolCallPart, ToolResultMessage } from "../messages.js";
import type { JsonSchema, Model, ModelEvent, ModelRequest, ToolDefinition } from "../model/model.js";
import { extractJsonObjects, isJsonObject, type JsonObject, parseLenientJson, preview, stripCodeFence } from "./json-extract.js";
import {
  argumentsValue,
  asStepLimit,
  type ConversationFormat,
  describeTools,
  finishEvent,
  innerRequest,
  newCallId,
  relayInnerCall,
  renderConversation,
  streamFinalResponse,
  TextProtocolModel,
  toolCallEvents,
  toolResultText,
  toolTurnsOfInput,
  withUserText,
  stepLimit,
} from "./shared.js";

/** One planned tool call. `needs` lists ids of earlier results it depends on. */
export interface PlannedTool {
  id: string;
  tool: string;
  args?: Record<string, unknown>;
  needs?: string[];
}

/** The planner's answer for one wave. */
export interface Plan {
  status: "continue" | "done";
  action: string;
  tools?: PlannedTool[];
  reasoning: string;
}

/** The JSON Schema every plan is validated against (the seed's `PlanningResult`, without the
 * hotel-specific `slots`; extra fields are allowed). */
export const PLAN_SCHEMA: JsonSchema = {
  type: "object",
  required: ["status", "action", "reasoning"],
  properties: {
    status: { enum: ["continue", "done"] },
    action: { type: "string" },
    tools: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "tool"],
        properties: {
          id: { type: "string", minLength: 1 },
          tool: { type: "string", minLength: 1 },
          args: { type: "object" },
          needs: { type: "array", items: { type: "string" } },
        },
      },
    },
    reasoning: { type: "string" },
  },
};

/** What the planner's tool calls carry in `providerData`, so the plan can be shown back to it. */
interface PlanCallData {
  protocol: "plan";
  planId: string;
  needs: string[];
  status: Plan["status"];
  action: string;
  reasoning: string;
}

const PROVIDER_DATA_KEY = "textToolCalling";

export const FINAL_RESPONSE_PROMPT = "You have the tool results you need. Now write your final response to the user, in plain text (no JSON).";

export interface PlanToolCallingOptions {
  /** Waves per user input before planning stops and the final response is asked for. Default 5,
   * the seed's `max_iterations`. */
  maxWaves?: number;
  /** Re-asks after a plan that is not valid JSON or fails the schema. Default 1; 0 fails at once. */
  maxRepairs?: number;
}

let validatePlanFunction: ValidateFunction | undefined;

/** The plan validator, compiled on first use: ajv loads only when a plan is parsed, so importing
 * `agentloop/text-tools` stays cheap (ajv is CommonJS, so a synchronous require works). */
function planValidator(): ValidateFunction {
  if (!validatePlanFunction) {
    const { Ajv } = createRequire(import.meta.url)("ajv") as { Ajv: typeof AjvClass };
    validatePlanFunction = new Ajv({ allErrors: true, strict: false }).compile(PLAN_SCHEMA);
  }
  return validatePlanFunction;
}

function describeErrors(errors: readonly ErrorObject[]): string {
  return errors
    .map((error) => {
      const field = error.instancePath ? error.instancePath.slice(1).replaceAll("/", ".") : "";
      if (error.keyword === "required") {
        const missing = String(error.params.missingProperty);
        return `missing required field "${field ? `${field}.${missing}` : missing}"`;
      }
      if (error.keyword === "enum") return `field "${field}" must be one of ${JSON.stringify(error.params.allowedValues)}`;
      return `field "${field || "(plan)"}" ${error.message ?? "is invalid"}`;
    })
    .join("; ");
}

export type PlanParseResult = { ok: true; plan: Plan } | { ok: false; error: string };

/**
 * Reads and validates a plan from the model's text: the whole answer as JSON (a fence is
 * allowed), else the first object in the text with a `status` field, else the first object.
 * Errors name the failing fields.
 */
export function parsePlan(text: string): PlanParseResult {
  let candidate: JsonObject | undefined;
  const whole = parseLenientJson(stripCodeFence(text));
  if (whole && isJsonObject(whole.value)) candidate = whole.value;
  else {
    const { objects, unterminatedAt } = extractJsonObjects(text);
    candidate = (objects.find((object) => "status" in object.value) ?? objects[0])?.value;
    if (!candidate) {
      if (unterminatedAt !== undefined) return { ok: false, error: `the plan JSON is incomplete (cut off?): ${preview(text.slice(unterminatedAt))}` };
      return { ok: false, error: `no JSON object in the answer: ${preview(text) || "(empty)"}` };
    }
  }
  const validatePlan = planValidator();
  if (!validatePlan(candidate)) return { ok: false, error: describeErrors(validatePlan.errors ?? []) };
  return { ok: true, plan: candidate as unknown as Plan };
}

export function planModeInstructions(tools: readonly ToolDefinition[]): string {
  return [
    "## Tool planning",
    "You work in waves:",
    "1. Plan the NEXT tools to run. Independent tools go in the same wave: they run in parallel.",
    "2. The system runs them and gives you their results.",
    "3. Then you decide: continue with more tools, or done.",
    'If a tool needs the result of another, plan it in a later wave (status "continue").',
    'When you have all the information you need, answer with status "done" and an empty tools array.',
    "",
    "## Available tools",
    describeTools(tools),
    "",
    "## Output",
    "Answer with ONLY one JSON object of this shape (no other text):",
    "{",
    '  "status": "continue" | "done",',
    '  "action": "what you are doing, in a few words",',
    '  "tools": [{"id": "unique_id", "tool": "tool_name", "args": {...}, "needs": []}],',
    '  "reasoning": "why these tools, or why you are done"',
    "}",
  ].join("\n");
}

function planData(call: ToolCallPart): PlanCallData | undefined {
  const data = call.providerData?.[PROVIDER_DATA_KEY];
  return isJsonObject(data) && data.protocol === "plan" ? (data as unknown as PlanCallData) : undefined;
}

/** The plan of an earlier wave, rebuilt from its tool calls. */
function planOf(calls: ToolCallPart[]): Plan {
  const first = planData(calls[0]);
  return {
    status: first?.status ?? "continue",
    action: first?.action ?? "",
    tools: calls.map((call) => {
      const data = planData(call);
      const args = argumentsValue(call.arguments);
      return { id: data?.planId ?? call.id, tool: call.name, args: isJsonObject(args) ? args : {}, needs: data?.needs ?? [] };
    }),
    reasoning: first?.reasoning ?? "",
  };
}

const planFormat: ConversationFormat = {
  toolCalls(calls) {
    return JSON.stringify(planOf(calls));
  },
  toolResults(results: ToolResultMessage[], callsById) {
    const byPlanId: Record<string, unknown> = {};
    for (const result of results) {
      const call = callsById.get(result.toolCallId);
      const key = (call && planData(call)?.planId) ?? result.toolCallId;
      const text = toolResultText(result);
      byPlanId[key] = result.isError ? { error: text } : argumentsValue(text);
    }
    return `Tool results:\n${JSON.stringify(byPlanId, null, 2)}`;
  },
};

class PlanToolCallingModel extends TextProtocolModel {
  private readonly maxWaves: number;
  private readonly maxRepairs: number;

  constructor(
    inner: Model,
    private readonly options: PlanToolCallingOptions,
  ) {
    super(inner, "plan tool calling");
    this.maxWaves = stepLimit(options.maxWaves, "planToolCalling: maxWaves");
    this.maxRepairs = options.maxRepairs ?? 1;
    if (!Number.isInteger(this.maxRepairs) || this.maxRepairs < 0) {
      throw new TypeError(`planToolCalling: maxRepairs must be a non-negative integer, got ${String(options.maxRepairs)}`);
    }
  }

  protected around(inner: Model): Model {
    return new PlanToolCallingModel(inner, this.options);
  }

  protected async *run(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const tools = request.tools ?? [];
    const waves = toolTurnsOfInput(request);
    const lastWave = waves[waves.length - 1];
    const plannedDone = lastWave !== undefined && planData(lastWave.content.find((part) => part.type === "tool-call") as ToolCallPart)?.status === "done";
    const history = renderConversation(request.messages, planFormat);
    // No planning when tools are off, when the last wave was planned as the final one ("done" with
    // tools), or when the wave budget is spent.
    if (tools.length === 0 || request.toolChoice === "none" || plannedDone || waves.length >= this.maxWaves) {
      const final = streamFinalResponse(this.inner, request, withUserText(history, FINAL_RESPONSE_PROMPT), true);
      // The waves ran out before the plan said done: the answer ends the run as a limit.
      const limited = tools.length > 0 && request.toolChoice !== "none" && !plannedDone;
      return yield* limited ? asStepLimit(final) : final;
    }

    let messages = renderConversation(request.messages, planFormat, planModeInstructions(tools));
    let first = true;
    for (let attempt = 0; ; attempt++) {
      const summary = yield* relayInnerCall(this.inner, innerRequest(request, messages), { forwardStart: first });
      first = false;
      if (summary.error) return yield { type: "error", error: summary.error };
      if (summary.nativeToolCalls > 0) return yield finishEvent("tool-calls", summary.finishReason);
      const parsed = parsePlan(summary.text);
      if (parsed.ok) {
        const plan = parsed.plan;
        const planned = plan.tools ?? [];
        if (planned.length === 0) {
          const answered: Message[] = [...history, { role: "assistant", content: [{ type: "text", text: summary.text }] }];
          return yield* streamFinalResponse(this.inner, request, withUserText(answered, FINAL_RESPONSE_PROMPT), false);
        }
        for (const tool of planned) {
          const data: PlanCallData = { protocol: "plan", planId: tool.id, needs: tool.needs ?? [], status: plan.status, action: plan.action, reasoning: plan.reasoning };
          yield* toolCallEvents({ id: newCallId(), name: tool.tool, arguments: JSON.stringify(tool.args ?? {}), providerData: { [PROVIDER_DATA_KEY]: data } });
        }
        return yield finishEvent("tool-calls", summary.finishReason);
      }
      if (attempt >= this.maxRepairs) {
        const message = `plan tool calling: ${this.modelId} answered an invalid plan${attempt > 0 ? ` (after ${attempt} re-ask${attempt > 1 ? "s" : ""})` : ""}: ${parsed.error}`;
        return yield { type: "error", error: new AgentLoopError("unknown", message, { provider: this.provider }) };
      }
      const retry: AssistantMessage = { role: "assistant", content: [{ type: "text", text: summary.text }] };
      messages = [
        ...messages,
        retry,
        { role: "user", content: `That plan is not valid: ${parsed.error}. Answer again with ONLY the JSON object described in the instructions.` },
      ];
    }
  }
}

/**
 * Wraps a plain-text model in the plan protocol. Each `stream()` call asks for one plan, checks
 * it against `PLAN_SCHEMA` (an invalid plan is re-asked once with the failing fields named, then
 * ends the stream with an `error` event naming them), and emits the plan's tools as one wave of
 * parallel tool calls. A plan without tools, or the turn after a `done` plan with tools, asks the
 * model for its final response inside the same stream and streams it as text.
 * Never throws: failures end the stream with an `error` event.
 */
export function planToolCalling(model: Model, options: PlanToolCallingOptions = {}): Model {
  return new PlanToolCallingModel(model, options);
}

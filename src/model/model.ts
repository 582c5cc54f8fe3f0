import type { AgentLoopError } from "../errors.js";
import type { AssistantMessage, AssistantPart, Message, ProviderData } from "../messages.js";
import { keepShape } from "../shapes.js";
import { type Usage, addUsage, emptyUsage } from "../usage.js";

/** A tool as the model sees it: name, description and JSON Schema of its arguments. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export type JsonSchema = Record<string, unknown>;

export type ToolChoice = "auto" | "none" | "required" | { type: "tool"; name: string };

export type ReasoningEffort = "minimal" | "low" | "medium" | "high";

/**
 * How much a reasoning model thinks: an effort, or a budget of thinking tokens. Each adapter maps
 * it to its provider's own knob (docs/providers.md, "Reasoning").
 */
export type ReasoningSetting = { effort: ReasoningEffort } | { budgetTokens: number };

export interface ModelOptions {
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
  stopSequences?: string[];
  seed?: number;
  /**
   * Time limits of a streamed call on the built-in adapters (override the adapter's options):
   * milliseconds until the first chunk of the answer (default 60 s), and of silence allowed between
   * chunks after it (default 30 s); 0 turns one off. Expiry ends the call with a `timeout` error.
   */
  firstByteTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** Reasoning effort or budget, mapped to each provider's own setting (`providerOptions` still win). */
  reasoning?: ReasoningSetting;
  /**
   * Prompt caching where the provider needs the request to ask for it (Anthropic `cache_control`
   * breakpoints, placed automatically). Default `true`; `false` opts out.
   */
  promptCaching?: boolean;
  /** Passed through to one provider, keyed by provider name: `{ openai: { reasoning_effort: "low" } }`. */
  providerOptions?: Record<string, Record<string, unknown>>;
}

/**
 * Asks for an answer that is JSON matching `schema` (structured output). Models with
 * `supportsStructuredOutput` send it with the provider's native mechanism; others ignore it (the
 * loop then asks in the instructions and validates).
 */
export interface ResponseFormat {
  type: "json_schema";
  /** A name for the schema (`[A-Za-z0-9_-]`, at most 64 characters). */
  name: string;
  schema: JsonSchema;
  /** OpenAI strict mode: every object closed (`additionalProperties: false`) with all properties required. */
  strict?: boolean;
}

export interface ModelRequest {
  messages: Message[];
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  options?: ModelOptions;
  /** Structured output: the final answer must be JSON matching this schema. */
  responseFormat?: ResponseFormat;
  signal?: AbortSignal;
  /**
   * Index in `messages` of the user message that started the current input. Everything after it
   * (tool results, steering, loop-detection warnings) belongs to the same input: the text
   * protocols count their steps from here. Unset: from the last user message.
   */
  inputStart?: number;
  /** The run's session, when it has one: adapters key provider-side prompt caches by it (OpenAI `prompt_cache_key`). */
  sessionId?: string;
  /** Told when a fallback model (`withFallback`) hands this request to the next model. */
  onFallback?: (fallback: ModelFallback) => void;
}

/** A request handed from one model to the next (`withFallback`): both models and why. */
export interface ModelFallback {
  /** `provider:model` of the model that failed. */
  from: string;
  /** `provider:model` of the model that takes the request. */
  to: string;
  /** The failure's message. */
  reason: string;
  error: AgentLoopError;
}

export type UnifiedFinishReason = "stop" | "tool-calls" | "length" | "content-filter" | "error" | "aborted" | "other";

export interface FinishReason {
  unified: UnifiedFinishReason;
  /** The provider's own value (`end_turn`, `tool_use`, `stop`, `completed`, ...). */
  raw?: string;
}

/**
 * The raw finish reason of an answer a text tool-calling protocol gives because its steps ran out
 * (`Reached maximum reasoning steps (N)` in the action and fenced modes, the final answer after the
 * last wave in plan mode): the loop ends the run `TURN_LIMIT` with that answer, as when `maxTurns`
 * ends a native run. One rule for every mode: a limit ended the run.
 */
export const STEP_LIMIT_FINISH = "agentloop.max_steps";

/** KAOS's answer when a run uses up its steps (seed 000's two-phase loop; its current runtime in every mode). */
export function maxStepsMessage(maxSteps: number): string {
  return `Reached maximum reasoning steps (${maxSteps})`;
}

/**
 * Everything a model stream can say. Text, reasoning and tool calls each come as start/delta/end;
 * every stream ends with exactly one `finish` or one `error` event.
 */
export type ModelEvent =
  | { type: "response-start"; id?: string; model?: string }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string; providerData?: ProviderData }
  | { type: "reasoning-start"; id: string }
  | { type: "reasoning-delta"; id: string; delta: string }
  | { type: "reasoning-end"; id: string; providerData?: ProviderData }
  | { type: "tool-call-start"; id: string; name: string }
  | { type: "tool-call-delta"; id: string; delta: string }
  | { type: "tool-call-end"; id: string; name: string; arguments: string; providerData?: ProviderData }
  | { type: "usage"; usage: Usage }
  | { type: "finish"; reason: FinishReason; usage?: Usage; providerData?: ProviderData }
  | { type: "error"; error: AgentLoopError };

/**
 * The one model interface. Streaming first: non-streaming is the stream collected.
 *
 * Contract: once called, `stream` never throws and its iterator never rejects; a failure
 * (network, HTTP status, abort, malformed data) ends the stream with an `error` event.
 */
export interface Model {
  readonly provider: string;
  readonly modelId: string;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
  /** True when the model sends `request.responseFormat` natively (the built-in provider adapters). */
  readonly supportsStructuredOutput?: boolean;
  /** Optional: the instance one run uses (a model that keeps per-run state makes a fresh one). */
  forRun?(): Model;
}

export interface ModelResponse {
  message: AssistantMessage;
  finishReason: FinishReason;
  usage: Usage;
  error?: AgentLoopError;
  /** Set by the loop when a fallback model handed the call on (tracing reads it). */
  fallbacks?: ModelFallback[];
}

/**
 * Folds model events into an assistant message. Used by `generate` and by the loop, so
 * collected and streamed turns can never disagree.
 */
export class ResponseAccumulator {
  private readonly parts: AssistantPart[] = [];
  // Open parts by id, one map per kind (ids of different kinds may coincide).
  private readonly openText = new Map<string, AssistantPart>();
  private readonly openReasoning = new Map<string, AssistantPart>();
  private readonly openCalls = new Map<string, AssistantPart>();
  usage: Usage = emptyUsage();
  private sawUsage = false;
  finishReason: FinishReason = { unified: "other" };
  error?: AgentLoopError;
  providerData?: ProviderData;

  add(event: ModelEvent): void {
    switch (event.type) {
      case "response-start":
        break;
      case "text-start":
        this.begin(this.openText, event.id, { type: "text", text: "" });
        break;
      case "text-delta": {
        const part = this.openText.get(event.id) ?? this.begin(this.openText, event.id, { type: "text", text: "" });
        if (part.type === "text") part.text += event.delta;
        break;
      }
      case "text-end": {
        const part = this.openText.get(event.id);
        if (part && event.providerData) part.providerData = event.providerData;
        this.openText.delete(event.id);
        break;
      }
      case "reasoning-start":
        this.begin(this.openReasoning, event.id, { type: "reasoning", text: "" });
        break;
      case "reasoning-delta": {
        const part = this.openReasoning.get(event.id) ?? this.begin(this.openReasoning, event.id, { type: "reasoning", text: "" });
        if (part.type === "reasoning") part.text += event.delta;
        break;
      }
      case "reasoning-end": {
        const part = this.openReasoning.get(event.id) ?? this.begin(this.openReasoning, event.id, { type: "reasoning", text: "" });
        if (event.providerData) part.providerData = event.providerData;
        this.openReasoning.delete(event.id);
        break;
      }
      case "tool-call-start":
        this.begin(this.openCalls, event.id, { type: "tool-call", id: event.id, name: event.name, arguments: "" });
        break;
      case "tool-call-delta": {
        const part = this.openCalls.get(event.id);
        if (part?.type === "tool-call") part.arguments += event.delta;
        break;
      }
      case "tool-call-end": {
        const part = this.openCalls.get(event.id) ?? this.begin(this.openCalls, event.id, { type: "tool-call", id: event.id, name: event.name, arguments: "" });
        if (part.type === "tool-call") {
          part.name = event.name;
          part.arguments = event.arguments;
          if (event.providerData) part.providerData = event.providerData;
        }
        this.openCalls.delete(event.id);
        break;
      }
      case "usage":
        this.usage = this.sawUsage ? addUsage(this.usage, event.usage) : event.usage;
        this.sawUsage = true;
        break;
      case "finish":
        this.finishReason = event.reason;
        if (event.usage) this.usage = event.usage;
        if (event.providerData) this.providerData = event.providerData;
        break;
      case "error":
        this.error = event.error;
        this.finishReason = { unified: event.error.kind === "aborted" ? "aborted" : "error", raw: event.error.kind };
        break;
      default: {
        const unreachable: never = event;
        throw new Error(`unknown model event ${JSON.stringify(unreachable)}`);
      }
    }
  }

  response(): ModelResponse {
    const message: AssistantMessage = { role: "assistant", content: this.parts };
    if (this.providerData) message.providerData = this.providerData;
    return { message, finishReason: this.finishReason, usage: this.usage, error: this.error };
  }

  private begin(open: Map<string, AssistantPart>, id: string, part: AssistantPart): AssistantPart {
    this.parts.push(part);
    open.set(id, part);
    return part;
  }
}
keepShape(new ResponseAccumulator()); // see src/shapes.ts

/** Non-streaming call: the stream collected into one response. Never throws. */
export async function generate(model: Model, request: ModelRequest): Promise<ModelResponse> {
  const accumulator = new ResponseAccumulator();
  for await (const event of model.stream(request)) accumulator.add(event);
  return accumulator.response();
}


/**
 * Choosing how a model calls tools: natively, through one of the text protocols, or `auto`
 * (native, falling back to the string protocol when the server rejects tools).
 */
import type { AgentLoopError } from "../errors.js";
import type { Model, ModelEvent, ModelRequest } from "../model/model.js";
import { type ActionToolCallingOptions, actionToolCalling } from "./action-mode.js";
import { type FencedToolCallingOptions, fencedToolCalling, recognizeFencedBlocks } from "./fenced-mode.js";
import { type PlanToolCallingOptions, planToolCalling } from "./plan-mode.js";
import { TextProtocolModel } from "./shared.js";
import { type StringToolCallingOptions, stringToolCalling } from "./string-mode.js";

export const TOOL_CALL_MODES = ["auto", "native", "string", "action", "plan", "fenced"] as const;
export type ToolCallMode = (typeof TOOL_CALL_MODES)[number];

export interface ToolCallModeOptions extends StringToolCallingOptions, ActionToolCallingOptions, PlanToolCallingOptions, FencedToolCallingOptions {
  /** Called once when an `auto` model switches to the string protocol. */
  onFallback?(error: AgentLoopError): void;
}

/** Checks a mode name (from config or the environment), naming the valid ones when it is wrong. */
export function parseToolCallMode(value: string, source = "tool call mode"): ToolCallMode {
  const mode = value.trim().toLowerCase();
  if ((TOOL_CALL_MODES as readonly string[]).includes(mode)) return mode as ToolCallMode;
  throw new TypeError(`${source}: unknown tool call mode "${value}"; use one of ${TOOL_CALL_MODES.join(", ")}`);
}

/** `TOOL_CALL_MODE` from the environment (as in KAOS), or undefined when it is not set. */
export function toolCallModeFromEnv(env: NodeJS.ProcessEnv = process.env): ToolCallMode | undefined {
  const value = env.TOOL_CALL_MODE;
  return value === undefined || value.trim() === "" ? undefined : parseToolCallMode(value, "TOOL_CALL_MODE");
}

/**
 * Whether an error says the server does not accept native tools: HTTP 400 or 422 with a
 * message about tools or functions (`tools not supported`, `does not support function calling`...).
 */
export function isToolsUnsupportedError(error: AgentLoopError): boolean {
  if (error.status !== 400 && error.status !== 422) return false;
  return /\b(tools?|functions?|function[ _-]?call(s|ing)?|tool[ _-]?(calls?|choice|use))\b/i.test(error.message);
}

/** Shared by an `auto` model and the per-run copies `forRun` makes of it. */
interface AutoState {
  useString: boolean;
}

class AutoToolCallingModel extends TextProtocolModel {
  private stringModel?: Model;

  constructor(
    inner: Model,
    private readonly options: ToolCallModeOptions,
    private readonly state: AutoState = { useString: false },
  ) {
    super(inner, "auto tool calling");
  }

  protected around(inner: Model): Model {
    return new AutoToolCallingModel(inner, this.options, this.state);
  }

  private fallback(): Model {
    this.stringModel ??= stringToolCalling(this.inner, this.options);
    return this.stringModel;
  }

  override stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    // Without tools there is no rejection to fall back from and no fenced block to read: the
    // inner model's stream as it is (no generator per layer for every streamed chunk).
    if (!this.state.useString && !request.tools?.length) return this.inner.stream(request);
    return super.stream(request);
  }

  protected async *run(request: ModelRequest): AsyncGenerator<ModelEvent> {
    // KAOS-style fenced blocks in the text are recognised as tool calls too.
    if (!request.tools?.length || request.toolChoice === "none") return yield* this.native(request);
    yield* recognizeFencedBlocks(this.native(request));
  }

  private async *native(request: ModelRequest): AsyncGenerator<ModelEvent> {
    if (this.state.useString) return yield* this.fallback().stream(request);
    if (!request.tools?.length) return yield* this.inner.stream(request);
    // Events before the first output are held back, so a rejection can still be retried unseen.
    const held: ModelEvent[] = [];
    let released = false;
    for await (const event of this.inner.stream(request)) {
      if (!released) {
        if (event.type === "response-start" || event.type === "usage") {
          held.push(event);
          continue;
        }
        if (event.type === "error" && isToolsUnsupportedError(event.error) && !request.signal?.aborted) {
          this.state.useString = true;
          this.options.onFallback?.(event.error);
          return yield* this.fallback().stream(request);
        }
        released = true;
        yield* held;
      }
      yield event;
    }
    if (!released) yield* held;
  }
}

/**
 * A model that calls tools the chosen way. `native` is the model itself; `string`, `action`,
 * `plan` and `fenced` wrap it in that text protocol; `auto` calls natively and, when the server answers
 * 400/422 about tools or functions before any output, switches to the string protocol for good
 * (this wrapper and its per-run copies remember it) and retries the request that way; `auto` also
 * reads KAOS's fenced ```tool_call / ```delegate blocks in the text as tool calls.
 * Throws a TypeError for an unknown mode.
 */
export function withToolCallMode(model: Model, mode: ToolCallMode, options: ToolCallModeOptions = {}): Model {
  switch (parseToolCallMode(String(mode), "withToolCallMode")) {
    case "native":
      return model;
    case "string":
      return stringToolCalling(model, options);
    case "action":
      return actionToolCalling(model, options);
    case "plan":
      return planToolCalling(model, options);
    case "fenced":
      return fencedToolCalling(model, options);
    case "auto":
      return new AutoToolCallingModel(model, options);
  }
}

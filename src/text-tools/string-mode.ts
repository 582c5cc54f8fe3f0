/**
 * The string protocol (KAOS `TOOL_CALL_MODE=string`): tools are described in the system prompt and
 * the model answers `{"tool_calls":[{"name","arguments"}]}` to call them, or plain text when done.
 */
import { AgentLoopError } from "../errors.js";
import type { ToolResultMessage } from "../messages.js";
import type { Model, ModelEvent, ModelRequest, ToolChoice, ToolDefinition } from "../model/model.js";
import { extractJsonObjects, isJsonObject, preview } from "./json-extract.js";
import {
  argumentsText,
  argumentsValue,
  type ConversationFormat,
  closingFinish,
  describeTools,
  finishEvent,
  innerRequest,
  newCallId,
  relayInnerCall,
  renderConversation,
  TextEmitter,
  TextProtocolModel,
  toolCallEvents,
  toolResultText,
} from "./shared.js";

export interface StringToolCallingOptions {
  /** Replaces the tool instructions appended to the system prompt. */
  instructions?: (tools: readonly ToolDefinition[], toolChoice: ToolChoice | undefined) => string;
}

/** One call read from the model's text; `arguments` is JSON text. */
export interface ParsedTextToolCall {
  name: string;
  arguments: string;
}

export type StringParseResult =
  | { kind: "calls"; calls: ParsedTextToolCall[]; /** `content` given next to `tool_calls`, if any */ content: string }
  | { kind: "text" }
  | { kind: "invalid"; message: string };

export function stringModeInstructions(tools: readonly ToolDefinition[], toolChoice?: ToolChoice): string {
  const lines = [
    "## Tools",
    "You can call these tools:",
    describeTools(tools),
    "",
    "To call tools, answer with ONLY this JSON (no other text):",
    '{"tool_calls": [{"name": "tool_name", "arguments": {"arg1": "value1"}}]}',
    "You may list several calls; they run in parallel. The results come back in the next message.",
    "When you have everything you need, answer the user in plain text, without any JSON.",
  ];
  if (toolChoice === "required") lines.push("You must call at least one tool now.");
  else if (typeof toolChoice === "object") lines.push(`You must call the tool "${toolChoice.name}" now.`);
  return lines.join("\n");
}

/** A call from a `tool_calls` entry: `{name, arguments}` or OpenAI's `{function: {name, arguments}}`. */
function callFromEntry(entry: unknown): ParsedTextToolCall | undefined {
  if (!isJsonObject(entry)) return undefined;
  const inner = isJsonObject(entry.function) ? entry.function : entry;
  if (typeof inner.name !== "string" || inner.name === "") return undefined;
  return { name: inner.name, arguments: argumentsText(inner.arguments ?? inner.args ?? inner.parameters) };
}

/**
 * Reads tool calls from a model's text. `{"tool_calls": [...]}` objects always count; the
 * `{"name", "arguments"}` shorthand counts only when `name` is one of `toolNames` (so JSON data in
 * an answer is not mistaken for a call). Fences and surrounding prose are ignored; several
 * objects add up. A tool-call object cut off before its end is `invalid`, as is a `tool_calls`
 * entry without a name; anything else without calls is plain `text`.
 */
export function parseStringToolCalls(text: string, toolNames?: ReadonlySet<string>): StringParseResult {
  const { objects, unterminatedAt } = extractJsonObjects(text);
  const calls: ParsedTextToolCall[] = [];
  let content = "";
  for (const { value } of objects) {
    if (Array.isArray(value.tool_calls)) {
      for (const [index, entry] of value.tool_calls.entries()) {
        const call = callFromEntry(entry);
        if (!call) return { kind: "invalid", message: `tool_calls[${index}] has no tool name: ${preview(JSON.stringify(entry))}` };
        calls.push(call);
      }
      if (typeof value.content === "string") content += value.content;
    } else if (typeof value.name === "string" && "arguments" in value && (!toolNames || toolNames.has(value.name))) {
      calls.push({ name: value.name, arguments: argumentsText(value.arguments) });
    }
  }
  if (unterminatedAt !== undefined) {
    const rest = text.slice(unterminatedAt);
    if (/"(tool_calls|name|arguments|function)"\s*:/.test(rest)) {
      return { kind: "invalid", message: `the tool call JSON is incomplete (cut off?): ${preview(rest)}` };
    }
  }
  if (calls.length > 0) return { kind: "calls", calls, content };
  return { kind: "text" };
}

/**
 * Splits streamed text into what can be shown now and what must be held back: text streams
 * until the first `{` or ``` fence (where a tool call may begin); from there on it is held until
 * the end. Trailing whitespace and backticks wait for the next delta, so a fence split across
 * deltas is still recognised and a JSON-only answer shows no stray whitespace.
 */
class ToolCallTextSplitter {
  private pending = "";
  private heldText = "";
  private holding = false;

  push(delta: string): string {
    if (this.holding) {
      this.heldText += delta;
      return "";
    }
    const text = this.pending + delta;
    const brace = text.indexOf("{");
    const fence = text.indexOf("```");
    const trigger = brace === -1 ? fence : fence === -1 ? brace : Math.min(brace, fence);
    if (trigger !== -1) {
      let cut = trigger;
      while (cut > 0 && /\s/.test(text[cut - 1])) cut--;
      this.holding = true;
      this.heldText = text.slice(cut);
      this.pending = "";
      return text.slice(0, cut);
    }
    const tail = /[\s`]*$/.exec(text)?.[0] ?? "";
    this.pending = tail;
    return text.slice(0, text.length - tail.length);
  }

  /** Whether text is being held because a tool call may have started. */
  get isHolding(): boolean {
    return this.holding;
  }

  /** The held text (when holding) or the undecided tail (when not). */
  get rest(): string {
    return this.holding ? this.heldText : this.pending;
  }
}

function stringFormat(): ConversationFormat {
  return {
    toolCalls(calls) {
      const toolCalls = calls.map((call) => ({ name: call.name, arguments: argumentsValue(call.arguments) }));
      return JSON.stringify({ tool_calls: toolCalls });
    },
    toolResults(results: ToolResultMessage[]) {
      const blocks = results.map(
        (result) => `${result.isError ? "Tool error" : "Tool result"} for ${result.toolName} (call ${result.toolCallId}):\n${toolResultText(result)}`,
      );
      blocks.push('Call more tools with {"tool_calls": [...]} if you need to, or answer the user in plain text.');
      return blocks.join("\n\n");
    },
  };
}

class StringToolCallingModel extends TextProtocolModel {
  constructor(
    inner: Model,
    private readonly options: StringToolCallingOptions,
  ) {
    super(inner, "string tool calling");
  }

  protected around(inner: Model): Model {
    return new StringToolCallingModel(inner, this.options);
  }

  protected async *run(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const tools = request.tools ?? [];
    const useTools = tools.length > 0 && request.toolChoice !== "none";
    const addition = useTools ? (this.options.instructions ?? stringModeInstructions)(tools, request.toolChoice) : "";
    const messages = renderConversation(request.messages, stringFormat(), addition);
    const emitter = new TextEmitter();
    const splitter = new ToolCallTextSplitter();
    const summary = yield* relayInnerCall(this.inner, innerRequest(request, messages), {
      forwardStart: true,
      onText: (delta) => (useTools ? emitter.delta(splitter.push(delta)) : emitter.delta(delta)),
    });
    if (summary.error) {
      yield { type: "error", error: summary.error };
      return;
    }
    if (!useTools) {
      yield* emitter.end();
      yield { type: "finish", reason: summary.finishReason ?? { unified: "stop" } };
      return;
    }
    if (!splitter.isHolding) {
      yield* emitter.delta(splitter.rest);
      yield* emitter.end();
      yield closingFinish(summary);
      return;
    }
    const parsed = parseStringToolCalls(splitter.rest, new Set(tools.map((tool) => tool.name)));
    if (parsed.kind === "invalid") {
      const cutOff = summary.finishReason?.unified === "length" ? " (the answer hit the output token limit)" : "";
      yield {
        type: "error",
        error: new AgentLoopError("unknown", `string tool calling: ${this.modelId} answered an unreadable tool call${cutOff}: ${parsed.message}`, {
          provider: this.provider,
        }),
      };
      return;
    }
    if (parsed.kind === "text") {
      yield* emitter.delta(splitter.rest);
      yield* emitter.end();
      yield closingFinish(summary);
      return;
    }
    yield* emitter.delta(parsed.content);
    yield* emitter.end();
    for (const call of parsed.calls) yield* toolCallEvents({ id: newCallId(), name: call.name, arguments: call.arguments });
    yield finishEvent("tool-calls", summary.finishReason);
  }
}

/**
 * Wraps a plain-text model so it can call tools through the string protocol. The wrapped model
 * receives the tools in its system prompt, earlier calls and results as text, and no native
 * `tools`; its answers become native-looking `tool-call-*` events. Plain-text answers stream as
 * they come; from the first `{` or ``` fence on, text is held until it is known not to be a call.
 * Never throws: failures (including an unreadable call) end the stream with an `error` event.
 */
export function stringToolCalling(model: Model, options: StringToolCallingOptions = {}): Model {
  return new StringToolCallingModel(model, options);
}

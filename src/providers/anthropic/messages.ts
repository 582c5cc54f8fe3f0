/**
 * Anthropic Messages adapter on the official `@anthropic-ai/sdk`.
 *
 * Wire format: the system prompt is the top-level `system` field; an assistant message is sent
 * back with all its original content blocks verbatim (text, tool_use, thinking with its signature,
 * redacted_thinking), kept per part in `providerData.anthropic.block`; all tool results of one
 * wave go in ONE user message of `tool_result` blocks (`is_error` for errors); consecutive
 * messages of the same role are merged; `max_tokens` defaults to 4096.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { ImagePart, Message, TextPart } from "../../messages.js";
import type { FinishReason, ModelEvent, ModelRequest, ToolChoice, UnifiedFinishReason } from "../../model/model.js";
import type { Usage } from "../../usage.js";
import { reasoningBudget, reasoningSetting } from "../reasoning.js";
import {
  type AdapterOptions,
  AdapterModel,
  appendTurn,
  commonRequestFields,
  refusalError,
  tokenUsage,
  type CallContext,
  numberOr,
  objectSchema,
  parseArgumentsObject,
  providerOptionsFor,
} from "../shared.js";
import type { ToolNameMap } from "../tool-names.js";

export interface AnthropicOptions extends AdapterOptions {
  /**
   * Prompt caching breakpoints (`cache_control`) placed on every request: after the tools and the
   * system prompt, and on the newest message. Default `true`; a request's `options.promptCaching` wins.
   */
  promptCaching?: boolean;
  /** `max_tokens` when the request sets no `maxOutputTokens` (default 4096). */
  defaultMaxTokens?: number;
  /** A preconfigured client (its retries should be off: `maxRetries: 0`). */
  client?: Anthropic;
}

/** What a part of an Anthropic answer keeps for the round trip: its original content block. */
export interface AnthropicProviderData {
  block: Record<string, unknown>;
}

/**
 * Kept on the assistant message when the answer held blocks no part can carry (server tool use,
 * web search results, ...): every block in order, sent back instead of the parts.
 */
export interface AnthropicMessageData {
  content: Array<Record<string, unknown>>;
}

type Block = Record<string, unknown>;

const anthropicConnection = {
  provider: "anthropic",
  apiKeyEnvVar: "ANTHROPIC_API_KEY",
  baseUrlEnvVar: "ANTHROPIC_BASE_URL",
  officialHost: "api.anthropic.com",
  defaultPath: "",
};

interface StreamEventLike {
  type: string;
  [key: string]: any;
}
const dataKey = "anthropic";

/** Reads an Anthropic usage object. `inputTokens` counts all input, cached or not (as OpenAI does). */
export function anthropicUsage(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const usage = raw as {
    input_tokens?: number | null;
    output_tokens?: number | null;
    cache_read_input_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
    output_tokens_details?: { thinking_tokens?: number } | null;
  };
  const cachedInputTokens = numberOr(usage.cache_read_input_tokens);
  const written = numberOr(usage.cache_creation_input_tokens);
  const result = tokenUsage({
    input: numberOr(usage.input_tokens) + cachedInputTokens + written,
    output: usage.output_tokens,
    cached: cachedInputTokens,
    reasoning: usage.output_tokens_details?.thinking_tokens,
  });
  if (written > 0) result.cacheWriteInputTokens = written;
  return result;
}

function originalBlock(providerData: Record<string, unknown> | undefined): Block | undefined {
  const value = providerData?.[dataKey] as AnthropicProviderData | undefined;
  return value && typeof value === "object" && value.block && typeof value.block === "object" ? value.block : undefined;
}

function imageBlock(part: ImagePart): Block {
  if (part.data) return { type: "image", source: { type: "base64", media_type: part.mediaType ?? "image/png", data: part.data } };
  return { type: "image", source: { type: "url", url: part.url ?? "" } };
}

function contentBlocks(content: string | Array<TextPart | ImagePart>): Block[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  return content.flatMap((part) => (part.type === "text" ? (part.text ? [{ type: "text", text: part.text }] : []) : [imageBlock(part)]));
}

/** The unified conversation as Anthropic `system` + `messages`. */
export function anthropicMessages(messages: readonly Message[], names: ToolNameMap): { system?: string; messages: Array<{ role: "user" | "assistant"; content: Block[] }> } {
  const system: string[] = [];
  const out: Array<{ role: "user" | "assistant"; content: Block[] }> = [];
  const append = (role: "user" | "assistant", blocks: Block[]) => appendTurn(out, "content", role, blocks);
  for (const message of messages) {
    switch (message.role) {
      case "system":
        system.push(message.content);
        break;
      case "user":
        append("user", contentBlocks(message.content));
        break;
      case "assistant": {
        const whole = (message.providerData?.[dataKey] as AnthropicMessageData | undefined)?.content;
        if (Array.isArray(whole)) {
          append("assistant", whole);
          break;
        }
        const blocks: Block[] = [];
        for (const part of message.content) {
          const original = originalBlock(part.providerData);
          if (original) blocks.push(original);
          else if (part.type === "text") {
            if (part.text) blocks.push({ type: "text", text: part.text });
          } else if (part.type === "tool-call") {
            blocks.push({ type: "tool_use", id: part.id, name: names.toProviderName(part.name), input: parseArgumentsObject(part.arguments) });
          }
          // Reasoning without its signature (from another provider) cannot be sent back.
        }
        append("assistant", blocks);
        break;
      }
      case "tool": {
        const block: Block = { type: "tool_result", tool_use_id: message.toolCallId, content: typeof message.content === "string" ? message.content : contentBlocks(message.content) };
        if (message.isError) block.is_error = true;
        append("user", [block]);
        break;
      }
      default: {
        const unreachable: never = message;
        throw new TypeError(`unknown message role in ${JSON.stringify(unreachable)}`);
      }
    }
  }
  // Anthropic wants the tool results first in the user message that answers a tool_use turn.
  for (const message of out) {
    if (message.role !== "user") continue;
    const results = message.content.filter((block) => block.type === "tool_result");
    if (results.length > 0) message.content = [...results, ...message.content.filter((block) => block.type !== "tool_result")];
  }
  return { system: system.length > 0 ? system.join("\n\n") : undefined, messages: out };
}

function toolChoiceParam(choice: ToolChoice, names: ToolNameMap): Block {
  if (choice === "auto") return { type: "auto" };
  if (choice === "none") return { type: "none" };
  if (choice === "required") return { type: "any" };
  return { type: "tool", name: names.toProviderName(choice.name) };
}

function unifiedFinish(raw: string | undefined): UnifiedFinishReason {
  switch (raw) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "tool_use":
      return "tool-calls";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    default:
      return "other";
  }
}

interface OpenBlock {
  kind: "text" | "reasoning" | "tool" | "other";
  id: string;
  start: Block;
  text: string;
  signature: string;
  citations: unknown[];
}

/** Folds Anthropic stream events into model events. */
class AnthropicStreamMapper {
  private readonly blocks = new Map<number, OpenBlock>();
  /** Every closed block, verbatim and in order. */
  private readonly closed: Block[] = [];
  private sawOtherBlock = false;
  private usage: Record<string, unknown> = {};
  private stopReason?: string;

  constructor(
    private readonly provider: string,
    private readonly names: ToolNameMap,
  ) {}

  *event(event: StreamEventLike): Generator<ModelEvent> {
    switch (event.type) {
      case "message_start":
        this.usage = { ...(event.message?.usage ?? {}) };
        yield { type: "response-start", id: event.message?.id, model: event.message?.model };
        break;
      case "content_block_start": {
        const start: Block = event.content_block ?? {};
        const index: number = event.index ?? 0;
        const open: OpenBlock = { kind: "other", id: `block-${index}`, start, text: "", signature: "", citations: [] };
        if (start.type === "text") {
          open.kind = "text";
          open.text = typeof start.text === "string" ? start.text : "";
          yield { type: "text-start", id: open.id };
          if (open.text) yield { type: "text-delta", id: open.id, delta: open.text };
        } else if (start.type === "thinking" || start.type === "redacted_thinking") {
          open.kind = "reasoning";
          open.text = typeof start.thinking === "string" ? start.thinking : "";
          open.signature = typeof start.signature === "string" ? start.signature : "";
          yield { type: "reasoning-start", id: open.id };
          if (open.text) yield { type: "reasoning-delta", id: open.id, delta: open.text };
        } else if (start.type === "tool_use") {
          open.kind = "tool";
          open.id = String(start.id);
          yield { type: "tool-call-start", id: open.id, name: this.names.fromProviderName(String(start.name)) };
        }
        this.blocks.set(index, open);
        break;
      }
      case "content_block_delta": {
        const open = this.blocks.get(event.index ?? 0);
        const delta = event.delta ?? {};
        if (!open) break;
        if (delta.type === "text_delta" && open.kind === "text") {
          open.text += delta.text;
          yield { type: "text-delta", id: open.id, delta: delta.text };
        } else if (delta.type === "thinking_delta" && open.kind === "reasoning") {
          open.text += delta.thinking;
          yield { type: "reasoning-delta", id: open.id, delta: delta.thinking };
        } else if (delta.type === "signature_delta") {
          open.signature += delta.signature;
        } else if (delta.type === "citations_delta") {
          open.citations.push(delta.citation);
        } else if (delta.type === "input_json_delta") {
          open.text += delta.partial_json;
          if (open.kind === "tool" && delta.partial_json) yield { type: "tool-call-delta", id: open.id, delta: delta.partial_json };
        }
        break;
      }
      case "content_block_stop": {
        const index: number = event.index ?? 0;
        const open = this.blocks.get(index);
        if (!open) break;
        this.blocks.delete(index);
        yield* this.closeBlock(open);
        break;
      }
      case "message_delta":
        if (event.delta?.stop_reason) this.stopReason = event.delta.stop_reason;
        for (const [key, value] of Object.entries(event.usage ?? {})) if (value !== null && value !== undefined) this.usage[key] = value;
        break;
      case "message_stop":
        yield* this.finish();
        break;
      default:
        break;
    }
  }

  private *closeBlock(open: OpenBlock): Generator<ModelEvent> {
    const { start } = open;
    if (open.kind === "text") {
      const block: Block = { ...start, text: open.text };
      if (open.citations.length > 0) block.citations = [...((start.citations as unknown[] | null) ?? []), ...open.citations];
      this.closed.push(block);
      yield { type: "text-end", id: open.id, providerData: { [dataKey]: { block } satisfies AnthropicProviderData } };
    } else if (open.kind === "reasoning") {
      const block: Block = start.type === "thinking" ? { ...start, thinking: open.text, signature: open.signature } : { ...start };
      this.closed.push(block);
      yield { type: "reasoning-end", id: open.id, providerData: { [dataKey]: { block } satisfies AnthropicProviderData } };
    } else if (open.kind === "other") {
      this.sawOtherBlock = true;
      this.closed.push(open.text ? { ...start, input: parseArgumentsObject(open.text) } : { ...start });
    } else {
      const argumentsText = open.text || (start.input && Object.keys(start.input as object).length > 0 ? JSON.stringify(start.input) : "{}");
      const block: Block = { ...start, input: parseArgumentsObject(argumentsText) };
      this.closed.push(block);
      yield {
        type: "tool-call-end",
        id: open.id,
        name: this.names.fromProviderName(String(start.name)),
        arguments: argumentsText,
        providerData: { [dataKey]: { block } satisfies AnthropicProviderData },
      };
    }
  }

  private *finish(): Generator<ModelEvent> {
    for (const open of this.blocks.values()) yield* this.closeBlock(open);
    this.blocks.clear();
    if (this.stopReason === "refusal") {
      yield { type: "error", error: refusalError(this.provider, " (stop_reason refusal)") };
      return;
    }
    const usage = anthropicUsage(this.usage);
    const reason: FinishReason = { unified: unifiedFinish(this.stopReason), raw: this.stopReason };
    if (usage) yield { type: "usage", usage };
    const providerData = this.sawOtherBlock ? { [dataKey]: { content: this.closed } satisfies AnthropicMessageData } : undefined;
    yield { type: "finish", reason, usage, ...(providerData ? { providerData } : {}) };
  }
}

export class AnthropicModel extends AdapterModel<Anthropic, AnthropicOptions> {
  constructor(modelId: string, options: AnthropicOptions = {}) {
    super(modelId, options, anthropicConnection, (settings) => new Anthropic(settings));
  }

  private body(request: ModelRequest, names: ToolNameMap): Record<string, unknown> {
    const options = request.options ?? {};
    const { system, messages } = anthropicMessages(request.messages, names);
    const body: Record<string, unknown> = {
      model: this.modelId,
      max_tokens: options.maxOutputTokens ?? this.options.defaultMaxTokens ?? 4096,
      messages,
      stream: this.options.stream !== false,
      ...commonRequestFields(
        request,
        (tool) => ({ name: names.toProviderName(tool.name), description: tool.description, input_schema: objectSchema(tool.parameters) }),
        (choice) => toolChoiceParam(choice, names),
      ),
    };
    if (system !== undefined) body.system = system;
    if ((options.promptCaching ?? this.options.promptCaching) !== false) placeCacheBreakpoints(body);
    if (options.stopSequences?.length) body.stop_sequences = options.stopSequences;
    // Structured outputs (generally available): `output_config.format`, no beta header.
    if (request.responseFormat) body.output_config = { format: { type: "json_schema", schema: request.responseFormat.schema } };
    const reasoning = reasoningSetting(request);
    if (reasoning) {
      // Anthropic's smallest budget is 1024, and max_tokens must stay above it.
      const budget = Math.max(1024, reasoningBudget(reasoning));
      body.thinking = { type: "enabled", budget_tokens: budget };
      if ((body.max_tokens as number) <= budget) body.max_tokens = budget + (this.options.defaultMaxTokens ?? 4096);
    }
    return Object.assign(body, providerOptionsFor(request, ["anthropic", this.provider]));
  }

  protected async *call(request: ModelRequest, { names, signal, alive }: CallContext): AsyncGenerator<ModelEvent> {
    const mapper = new AnthropicStreamMapper(this.provider, names);
    const body = this.body(request, names);
    if (body.stream === false) {
      const message = await this.connection.client.messages.create(body as unknown as Anthropic.MessageCreateParamsNonStreaming, { signal });
      for (const event of messageEvents(message as unknown as Block)) yield* mapper.event(event);
      return;
    }
    const stream = await this.connection.client.messages.create(body as unknown as Anthropic.MessageCreateParamsStreaming, { signal });
    for await (const event of stream) {
      alive();
      yield* mapper.event(event as unknown as StreamEventLike);
    }
  }
}

const ephemeral = { type: "ephemeral" } as const;

/** Blocks that refuse `cache_control`. */
const uncacheable = new Set(["thinking", "redacted_thinking"]);

/**
 * Anthropic caches a prefix only where the request marks one (at most 4 breakpoints). Three are
 * placed: on the last tool, on the system prompt (so tools and system are cached together, and
 * stay cached when only the conversation changes), and on the last block of the newest message
 * (the conversation so far: the next request, which extends it, reads it back). Marked blocks are
 * copies: blocks kept for the round trip are never changed.
 */
function placeCacheBreakpoints(body: Record<string, unknown>): void {
  const tools = body.tools as Block[] | undefined;
  if (tools && tools.length > 0) tools[tools.length - 1] = { ...tools[tools.length - 1], cache_control: ephemeral };
  if (typeof body.system === "string" && body.system) body.system = [{ type: "text", text: body.system, cache_control: ephemeral }];
  const messages = body.messages as Array<{ content: Block[] }>;
  const newest = messages[messages.length - 1];
  if (!newest) return;
  for (let index = newest.content.length - 1; index >= 0; index--) {
    const block = newest.content[index];
    if (uncacheable.has(String(block.type))) continue;
    newest.content = [...newest.content];
    newest.content[index] = { ...block, cache_control: ephemeral };
    return;
  }
}

/**
 * A non-streaming Messages body as the stream events that would have carried it, so both paths
 * share one mapper: each block starts empty and gets its text, thinking or input as one delta.
 */
function messageEvents(message: Block): StreamEventLike[] {
  const content: Block[] = Array.isArray(message.content) ? message.content : [];
  const events: StreamEventLike[] = [{ type: "message_start", message: { ...message, content: [] } }];
  content.forEach((block, index) => {
    if (block.type === "text") {
      events.push({ type: "content_block_start", index, content_block: { ...block, text: "" } });
      if (block.text) events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: block.text } });
    } else if (block.type === "tool_use") {
      events.push({ type: "content_block_start", index, content_block: { ...block, input: {} } });
      events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input ?? {}) } });
    } else {
      // thinking keeps its text and signature on the start block; other blocks are kept verbatim.
      events.push({ type: "content_block_start", index, content_block: block });
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push({ type: "message_delta", delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence ?? null }, usage: message.usage ?? {} });
  events.push({ type: "message_stop" });
  return events;
}

/** An Anthropic Messages model: `anthropic("claude-sonnet-4-5")`. */
export function anthropic(modelId: string, options: AnthropicOptions = {}): AnthropicModel {
  return new AnthropicModel(modelId, options);
}

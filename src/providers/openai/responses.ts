/**
 * OpenAI Responses API adapter on the official `openai` SDK.
 *
 * Wire format of a tool round: the original `function_call` items (id, call_id, name, arguments)
 * are sent back, each answered by `{type: "function_call_output", call_id, output}`. System text
 * goes to `instructions`. Reasoning items (with `encrypted_content` when requested) round-trip
 * unchanged: each part keeps its original item in `providerData.openaiResponses.item`.
 */
import OpenAI from "openai";
import type { Message, ToolResultMessage } from "../../messages.js";
import type { FinishReason, ModelEvent, ModelRequest, ToolChoice } from "../../model/model.js";
import type { Usage } from "../../usage.js";
import { reasoningEffort, reasoningSetting } from "../reasoning.js";
import { toAgentLoopError } from "../errors.js";
import {
  type AdapterOptions,
  AdapterModel,
  commonRequestFields,
  refusalError,
  tokenUsage,
  type CallContext,
  contentText,
  imageUrl,
  objectSchema,
  openaiConnection,
  promptCacheKey,
  providerOptionsFor,
} from "../shared.js";
import type { ToolNameMap } from "../tool-names.js";

export interface OpenAIResponsesOptions extends AdapterOptions {
  /** Send function tools with `strict: true` (their schemas must then meet OpenAI's strict rules). Default `false`. */
  strictTools?: boolean;
  /** A preconfigured client (its retries should be off: `maxRetries: 0`). */
  client?: OpenAI;
}

/** What a part of a Responses answer keeps for the round trip. */
export interface ResponsesProviderData {
  /** The original output item (reasoning and function_call items). */
  item?: Record<string, unknown>;
  /** The id of the message item a text part came from. */
  itemId?: string;
}

const dataKey = "openaiResponses";

/** Reads a Responses usage object, including cached and reasoning tokens. */
export function responsesUsage(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const usage = raw as Record<string, any>;
  return tokenUsage({
    input: usage.input_tokens,
    output: usage.output_tokens,
    total: usage.total_tokens,
    cached: usage.input_tokens_details?.cached_tokens,
    reasoning: usage.output_tokens_details?.reasoning_tokens,
  });
}

function partData(providerData: Record<string, unknown> | undefined): ResponsesProviderData | undefined {
  const value = providerData?.[dataKey];
  return value && typeof value === "object" ? (value as ResponsesProviderData) : undefined;
}

/** The unified conversation as Responses `instructions` + `input` items. */
export function responsesInput(messages: readonly Message[], names: ToolNameMap): { instructions?: string; input: unknown[] } {
  const instructions: string[] = [];
  const input: unknown[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "system":
        instructions.push(message.content);
        break;
      case "user":
        input.push({
          role: "user",
          content:
            typeof message.content === "string"
              ? message.content
              : message.content.map((part) =>
                  part.type === "text" ? { type: "input_text", text: part.text } : { type: "input_image", image_url: imageUrl(part), detail: "auto" },
                ),
        });
        break;
      case "assistant": {
        // Consecutive text parts of one message item go back as that item.
        let openMessage: { itemId?: string; content: unknown[] } | undefined;
        const flush = () => {
          if (!openMessage) return;
          const content = openMessage.content;
          input.push(
            openMessage.itemId
              ? { type: "message", role: "assistant", id: openMessage.itemId, status: "completed", content }
              : { type: "message", role: "assistant", content },
          );
          openMessage = undefined;
        };
        for (const part of message.content) {
          const data = partData(part.providerData);
          if (part.type === "text") {
            if (openMessage && openMessage.itemId !== data?.itemId) flush();
            openMessage ??= { itemId: data?.itemId, content: [] };
            openMessage.content.push({ type: "output_text", text: part.text, annotations: [] });
            continue;
          }
          flush();
          if (part.type === "reasoning") {
            // Reasoning from another provider cannot be sent to OpenAI; only original items round-trip.
            if (data?.item) input.push(data.item);
          } else if (data?.item && data.item.type === "function_call") {
            input.push(data.item);
          } else {
            input.push({ type: "function_call", call_id: part.id, name: names.toProviderName(part.name), arguments: part.arguments });
          }
        }
        flush();
        break;
      }
      case "tool":
        input.push({ type: "function_call_output", call_id: message.toolCallId, output: functionCallOutput(message.content) });
        break;
      default: {
        const unreachable: never = message;
        throw new TypeError(`unknown message role in ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return { instructions: instructions.length > 0 ? instructions.join("\n\n") : undefined, input };
}

/**
 * A tool result as `function_call_output.output`: plain text, or, when it holds images, the list
 * form (`input_text` and `input_image` items) that the Responses API takes there.
 */
function functionCallOutput(content: ToolResultMessage["content"]): unknown {
  if (typeof content === "string" || content.every((part) => part.type === "text")) return contentText(content);
  return content.map((part) => (part.type === "text" ? { type: "input_text", text: part.text } : { type: "input_image", image_url: imageUrl(part), detail: "auto" }));
}

function toolChoiceParam(choice: ToolChoice, names: ToolNameMap): unknown {
  if (typeof choice === "string") return choice;
  return { type: "function", name: names.toProviderName(choice.name) };
}

interface StreamEventLike {
  type: string;
  [key: string]: any;
}

/** Folds Responses stream events into model events. */
class ResponsesStreamMapper {
  private readonly callIdByItem = new Map<string, string>();
  private readonly openText = new Set<string>();
  private readonly openReasoning = new Set<string>();
  private sawFunctionCall = false;
  private refusal = "";

  constructor(
    private readonly provider: string,
    private readonly names: ToolNameMap,
  ) {}

  *event(event: StreamEventLike): Generator<ModelEvent> {
    switch (event.type) {
      case "response.created":
        yield { type: "response-start", id: event.response?.id, model: event.response?.model };
        break;
      case "response.output_item.added": {
        const item = event.item ?? {};
        if (item.type === "function_call") {
          this.sawFunctionCall = true;
          this.callIdByItem.set(item.id, item.call_id);
          yield { type: "tool-call-start", id: item.call_id, name: this.names.fromProviderName(item.name) };
          if (item.arguments) yield { type: "tool-call-delta", id: item.call_id, delta: item.arguments };
        } else if (item.type === "reasoning") {
          this.openReasoning.add(item.id);
          yield { type: "reasoning-start", id: item.id };
        }
        break;
      }
      case "response.output_text.delta": {
        const id = `${event.item_id}:${event.content_index ?? 0}`;
        if (!this.openText.has(id)) {
          this.openText.add(id);
          yield { type: "text-start", id };
        }
        if (event.delta) yield { type: "text-delta", id, delta: event.delta };
        break;
      }
      case "response.output_text.done": {
        const id = `${event.item_id}:${event.content_index ?? 0}`;
        if (!this.openText.has(id)) {
          // A done event without deltas still carries the text.
          yield { type: "text-start", id };
          if (event.text) yield { type: "text-delta", id, delta: event.text };
        }
        this.openText.delete(id);
        yield { type: "text-end", id, providerData: { [dataKey]: { itemId: event.item_id } satisfies ResponsesProviderData } };
        break;
      }
      case "response.refusal.delta":
        this.refusal += event.delta ?? "";
        break;
      case "response.reasoning_summary_part.added":
        if ((event.summary_index ?? 0) > 0) yield { type: "reasoning-delta", id: event.item_id, delta: "\n\n" };
        break;
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        if (event.delta) yield { type: "reasoning-delta", id: event.item_id, delta: event.delta };
        break;
      case "response.function_call_arguments.delta": {
        const callId = this.callIdByItem.get(event.item_id);
        if (callId && event.delta) yield { type: "tool-call-delta", id: callId, delta: event.delta };
        break;
      }
      case "response.output_item.done": {
        const item = event.item ?? {};
        if (item.type === "function_call") {
          yield {
            type: "tool-call-end",
            id: item.call_id,
            name: this.names.fromProviderName(item.name),
            arguments: item.arguments || "{}",
            providerData: { [dataKey]: { item } satisfies ResponsesProviderData },
          };
        } else if (item.type === "reasoning") {
          if (!this.openReasoning.has(item.id)) yield { type: "reasoning-start", id: item.id };
          this.openReasoning.delete(item.id);
          yield { type: "reasoning-end", id: item.id, providerData: { [dataKey]: { item } satisfies ResponsesProviderData } };
        }
        break;
      }
      case "response.completed":
      case "response.incomplete":
        yield* this.finish(event.response ?? {});
        break;
      case "response.failed": {
        const failure = event.response?.error ?? {};
        yield { type: "error", error: toAgentLoopError({ error: { type: failure.code, message: failure.message ?? "the response failed" } }, { provider: this.provider }) };
        break;
      }
      case "error":
        yield { type: "error", error: toAgentLoopError({ error: { type: event.code, message: event.message ?? "stream error" } }, { provider: this.provider }) };
        break;
      default:
        break;
    }
  }

  private *finish(response: Record<string, any>): Generator<ModelEvent> {
    if (this.refusal) {
      yield { type: "error", error: refusalError(this.provider, `: ${this.refusal}`) };
      return;
    }
    const usage = responsesUsage(response.usage);
    let reason: FinishReason;
    if (response.status === "incomplete") {
      const raw: string | undefined = response.incomplete_details?.reason;
      reason = { unified: raw === "max_output_tokens" ? "length" : raw === "content_filter" ? "content-filter" : "other", raw };
    } else {
      reason = { unified: this.sawFunctionCall ? "tool-calls" : "stop", raw: response.status ?? "completed" };
    }
    if (usage) yield { type: "usage", usage };
    yield { type: "finish", reason, usage };
  }
}

export class OpenAIResponsesModel extends AdapterModel<OpenAI, OpenAIResponsesOptions> {
  constructor(modelId: string, options: OpenAIResponsesOptions = {}) {
    super(modelId, options, openaiConnection("openai-responses"), (settings) => new OpenAI(settings));
  }

  private body(request: ModelRequest, names: ToolNameMap): Record<string, unknown> {
    const options = request.options ?? {};
    const { instructions, input } = responsesInput(request.messages, names);
    const body: Record<string, unknown> = {
      model: this.modelId,
      input,
      stream: this.options.stream !== false,
      ...commonRequestFields(
        request,
        (tool) => ({
          type: "function",
          name: names.toProviderName(tool.name),
          description: tool.description,
          parameters: objectSchema(tool.parameters),
          strict: this.options.strictTools ?? false,
        }),
        (choice) => toolChoiceParam(choice, names),
      ),
    };
    if (instructions !== undefined) body.instructions = instructions;
    if (options.maxOutputTokens !== undefined) body.max_output_tokens = options.maxOutputTokens;
    const format = request.responseFormat;
    if (format) body.text = { format: { type: "json_schema", name: format.name, schema: format.schema, strict: format.strict ?? false } };
    const reasoning = reasoningSetting(request);
    if (reasoning) body.reasoning = { effort: reasoningEffort(reasoning), summary: "auto" };
    const cacheKey = promptCacheKey(request);
    if (cacheKey) body.prompt_cache_key = cacheKey;
    Object.assign(body, providerOptionsFor(request, ["openai", "openai-responses", this.provider]));
    // Without storage the reasoning items must travel in the requests: ask for their encrypted content.
    if (body.store === false && body.reasoning !== undefined) {
      const include = Array.isArray(body.include) ? (body.include as unknown[]) : [];
      if (!include.includes("reasoning.encrypted_content")) body.include = [...include, "reasoning.encrypted_content"];
    }
    return body;
  }

  protected async *call(request: ModelRequest, { names, signal, alive }: CallContext): AsyncGenerator<ModelEvent> {
    const mapper = new ResponsesStreamMapper(this.provider, names);
    const body = this.body(request, names);
    if (body.stream === false) {
      const response = await this.connection.client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming, { signal });
      for (const event of responseEvents(response as unknown as Record<string, any>)) yield* mapper.event(event);
      return;
    }
    const stream = await this.connection.client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming, { signal });
    for await (const event of stream) {
      alive();
      yield* mapper.event(event as unknown as StreamEventLike);
    }
  }
}

/**
 * A non-streaming Responses body as the stream events that would have carried it, so both paths
 * share one mapper: each item is added and done, text and summaries come as one delta each.
 */
function responseEvents(response: Record<string, any>): StreamEventLike[] {
  const events: StreamEventLike[] = [{ type: "response.created", response: { ...response, output: [] } }];
  const output: Array<Record<string, any>> = Array.isArray(response.output) ? response.output : [];
  output.forEach((item, outputIndex) => {
    events.push({ type: "response.output_item.added", output_index: outputIndex, item });
    if (item.type === "reasoning") {
      const summaries: Array<{ text?: string }> = Array.isArray(item.summary) ? item.summary : [];
      summaries.forEach((summary, summaryIndex) => {
        events.push({ type: "response.reasoning_summary_part.added", item_id: item.id, summary_index: summaryIndex });
        events.push({ type: "response.reasoning_summary_text.delta", item_id: item.id, summary_index: summaryIndex, delta: summary.text ?? "" });
      });
      const content: Array<{ type?: string; text?: string }> = Array.isArray(item.content) ? item.content : [];
      for (const part of content) if (part.type === "reasoning_text") events.push({ type: "response.reasoning_text.delta", item_id: item.id, delta: part.text ?? "" });
    } else if (item.type === "message") {
      const content: Array<Record<string, any>> = Array.isArray(item.content) ? item.content : [];
      content.forEach((part, contentIndex) => {
        if (part.type === "output_text") events.push({ type: "response.output_text.done", item_id: item.id, content_index: contentIndex, text: part.text ?? "" });
        else if (part.type === "refusal") events.push({ type: "response.refusal.delta", item_id: item.id, content_index: contentIndex, delta: part.refusal ?? "" });
      });
    }
    events.push({ type: "response.output_item.done", output_index: outputIndex, item });
  });
  events.push({ type: response.status === "failed" ? "response.failed" : response.status === "incomplete" ? "response.incomplete" : "response.completed", response });
  return events;
}

/** A Responses API model: `openaiResponses("gpt-5")`. */
export function openaiResponses(modelId: string, options: OpenAIResponsesOptions = {}): OpenAIResponsesModel {
  return new OpenAIResponsesModel(modelId, options);
}

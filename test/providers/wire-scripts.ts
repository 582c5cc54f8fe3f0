/**
 * Scripted answers in each provider's own streaming wire format, so a local server can play
 * any turn (text, reasoning, parallel tool calls, usage) to the real SDK adapters.
 */
export interface ScriptedToolCall {
  id: string;
  /** The provider-legal name the server sends. */
  name: string;
  arguments: Record<string, unknown>;
}

export interface ScriptedTurn {
  text?: string;
  reasoning?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: { input: number; output: number; cached?: number; reasoning?: number };
}

/** Word-sized pieces that join back to the text. */
export function pieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

/** Arguments JSON in two pieces, as providers stream them. */
function argumentPieces(args: Record<string, unknown>): string[] {
  const json = JSON.stringify(args);
  const middle = Math.max(1, Math.floor(json.length / 2));
  return [json.slice(0, middle), json.slice(middle)];
}

const frame = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
const namedFrame = (payload: { type: string; [key: string]: unknown }) => `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;

export function chatFrames(turn: ScriptedTurn, model = "test-model"): string[] {
  const base = { id: "chatcmpl-test", object: "chat.completion.chunk", created: 1, model };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => frame({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const frames = [chunk({ role: "assistant", content: "" })];
  for (const piece of pieces(turn.reasoning ?? "")) frames.push(chunk({ reasoning_content: piece }));
  for (const piece of pieces(turn.text ?? "")) frames.push(chunk({ content: piece }));
  (turn.toolCalls ?? []).forEach((call, index) => {
    frames.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }));
    for (const piece of argumentPieces(call.arguments)) frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  frames.push(chunk({}, turn.toolCalls?.length ? "tool_calls" : "stop"));
  if (turn.usage) {
    const { input, output, cached = 0, reasoning = 0 } = turn.usage;
    frames.push(
      frame({
        ...base,
        choices: [],
        usage: {
          prompt_tokens: input,
          completion_tokens: output,
          total_tokens: input + output,
          prompt_tokens_details: { cached_tokens: cached },
          completion_tokens_details: { reasoning_tokens: reasoning },
        },
      }),
    );
  }
  frames.push("data: [DONE]\n\n");
  return frames;
}

export function responsesFrames(turn: ScriptedTurn, model = "test-model"): string[] {
  const frames: string[] = [];
  const output: unknown[] = [];
  let sequence = 0;
  const emit = (payload: Record<string, unknown> & { type: string }) => frames.push(namedFrame({ ...payload, sequence_number: sequence++ }));
  const response = { id: "resp_test", object: "response", model, status: "in_progress", output: [] as unknown[] };
  emit({ type: "response.created", response });
  let outputIndex = 0;
  if (turn.reasoning !== undefined) {
    const id = "rs_test";
    emit({ type: "response.output_item.added", output_index: outputIndex, item: { id, type: "reasoning", summary: [] } });
    emit({ type: "response.reasoning_summary_part.added", item_id: id, output_index: outputIndex, summary_index: 0, part: { type: "summary_text", text: "" } });
    for (const piece of pieces(turn.reasoning)) {
      emit({ type: "response.reasoning_summary_text.delta", item_id: id, output_index: outputIndex, summary_index: 0, delta: piece });
    }
    const item = { id, type: "reasoning", summary: [{ type: "summary_text", text: turn.reasoning }], encrypted_content: "gAAAA-encrypted-reasoning" };
    emit({ type: "response.output_item.done", output_index: outputIndex, item });
    output.push(item);
    outputIndex++;
  }
  if (turn.text !== undefined) {
    const id = "msg_test";
    emit({ type: "response.output_item.added", output_index: outputIndex, item: { id, type: "message", role: "assistant", status: "in_progress", content: [] } });
    emit({ type: "response.content_part.added", item_id: id, output_index: outputIndex, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
    for (const piece of pieces(turn.text)) emit({ type: "response.output_text.delta", item_id: id, output_index: outputIndex, content_index: 0, delta: piece });
    emit({ type: "response.output_text.done", item_id: id, output_index: outputIndex, content_index: 0, text: turn.text });
    const item = { id, type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: turn.text, annotations: [] }] };
    emit({ type: "response.output_item.done", output_index: outputIndex, item });
    output.push(item);
    outputIndex++;
  }
  for (const call of turn.toolCalls ?? []) {
    const id = `fc_${call.id}`;
    emit({ type: "response.output_item.added", output_index: outputIndex, item: { id, type: "function_call", status: "in_progress", arguments: "", call_id: call.id, name: call.name } });
    for (const piece of argumentPieces(call.arguments)) {
      emit({ type: "response.function_call_arguments.delta", item_id: id, output_index: outputIndex, delta: piece });
    }
    const argumentsText = JSON.stringify(call.arguments);
    emit({ type: "response.function_call_arguments.done", item_id: id, output_index: outputIndex, arguments: argumentsText });
    const item = { id, type: "function_call", status: "completed", arguments: argumentsText, call_id: call.id, name: call.name };
    emit({ type: "response.output_item.done", output_index: outputIndex, item });
    output.push(item);
    outputIndex++;
  }
  const usage = turn.usage
    ? {
        input_tokens: turn.usage.input,
        input_tokens_details: { cached_tokens: turn.usage.cached ?? 0 },
        output_tokens: turn.usage.output,
        output_tokens_details: { reasoning_tokens: turn.usage.reasoning ?? 0 },
        total_tokens: turn.usage.input + turn.usage.output,
      }
    : null;
  emit({ type: "response.completed", response: { ...response, status: "completed", output, usage } });
  return frames;
}

export function anthropicFrames(turn: ScriptedTurn, model = "test-model"): string[] {
  const frames: string[] = [];
  const emit = (payload: Record<string, unknown> & { type: string }) => frames.push(namedFrame(payload));
  const usage = turn.usage ?? { input: 0, output: 0 };
  emit({
    type: "message_start",
    message: {
      id: "msg_test",
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      usage: { input_tokens: usage.input - (usage.cached ?? 0), cache_read_input_tokens: usage.cached ?? 0, cache_creation_input_tokens: 0, output_tokens: 1 },
    },
  });
  let index = 0;
  if (turn.reasoning !== undefined) {
    emit({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } });
    for (const piece of pieces(turn.reasoning)) emit({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: piece } });
    emit({ type: "content_block_delta", index, delta: { type: "signature_delta", signature: "EqQBCgIYAhIM-signature" } });
    emit({ type: "content_block_stop", index });
    index++;
  }
  if (turn.text !== undefined) {
    emit({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
    emit({ type: "ping" });
    for (const piece of pieces(turn.text)) emit({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
    emit({ type: "content_block_stop", index });
    index++;
  }
  for (const call of turn.toolCalls ?? []) {
    emit({ type: "content_block_start", index, content_block: { type: "tool_use", id: call.id, name: call.name, input: {} } });
    for (const piece of argumentPieces(call.arguments)) emit({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } });
    emit({ type: "content_block_stop", index });
    index++;
  }
  emit({
    type: "message_delta",
    delta: { stop_reason: turn.toolCalls?.length ? "tool_use" : "end_turn", stop_sequence: null },
    usage: { output_tokens: usage.output, output_tokens_details: usage.reasoning ? { thinking_tokens: usage.reasoning } : null },
  });
  emit({ type: "message_stop" });
  return frames;
}

/** The same turn as a non-streaming Chat Completions body. */
export function chatBody(turn: ScriptedTurn, model = "test-model"): Record<string, unknown> {
  const message: Record<string, unknown> = { role: "assistant", content: turn.text ?? null };
  if (turn.reasoning !== undefined) message.reasoning_content = turn.reasoning;
  if (turn.toolCalls?.length) {
    message.tool_calls = turn.toolCalls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.arguments) } }));
  }
  const body: Record<string, unknown> = {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message, finish_reason: turn.toolCalls?.length ? "tool_calls" : "stop" }],
  };
  if (turn.usage) {
    const { input, output, cached = 0, reasoning = 0 } = turn.usage;
    body.usage = {
      prompt_tokens: input,
      completion_tokens: output,
      total_tokens: input + output,
      prompt_tokens_details: { cached_tokens: cached },
      completion_tokens_details: { reasoning_tokens: reasoning },
    };
  }
  return body;
}

/** The same turn as a non-streaming Responses body: the `response` of the last stream event. */
export function responsesBody(turn: ScriptedTurn, model = "test-model"): Record<string, unknown> {
  const frames = responsesFrames(turn, model);
  const completed = JSON.parse(frames[frames.length - 1].split("\ndata: ")[1]) as { response: Record<string, unknown> };
  return completed.response;
}

/** The same turn as a non-streaming Messages body. */
export function anthropicBody(turn: ScriptedTurn, model = "test-model"): Record<string, unknown> {
  const usage = turn.usage ?? { input: 0, output: 0 };
  const content: unknown[] = [];
  if (turn.reasoning !== undefined) content.push({ type: "thinking", thinking: turn.reasoning, signature: "EqQBCgIYAhIM-signature" });
  if (turn.text !== undefined) content.push({ type: "text", text: turn.text });
  for (const call of turn.toolCalls ?? []) content.push({ type: "tool_use", id: call.id, name: call.name, input: call.arguments });
  return {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: turn.toolCalls?.length ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: {
      input_tokens: usage.input - (usage.cached ?? 0),
      cache_read_input_tokens: usage.cached ?? 0,
      cache_creation_input_tokens: 0,
      output_tokens: usage.output,
      output_tokens_details: usage.reasoning ? { thinking_tokens: usage.reasoning } : null,
    },
  };
}

/** The chunks of a Gemini answer: thoughts, text pieces, then every call whole (Gemini sends calls whole). */
function geminiChunks(turn: ScriptedTurn, model: string): Array<Record<string, unknown>> {
  const usage = turn.usage ?? { input: 0, output: 0 };
  const reasoning = usage.reasoning ?? 0;
  const usageMetadata = {
    promptTokenCount: usage.input,
    candidatesTokenCount: usage.output - reasoning,
    thoughtsTokenCount: reasoning,
    cachedContentTokenCount: usage.cached ?? 0,
    totalTokenCount: usage.input + usage.output,
  };
  const chunk = (parts: unknown[], finishReason?: string) => ({
    candidates: [{ content: { parts, role: "model" }, index: 0, ...(finishReason ? { finishReason } : {}) }],
    usageMetadata,
    modelVersion: model,
    responseId: "gemini-test",
  });
  const chunks: Array<Record<string, unknown>> = [];
  for (const piece of pieces(turn.reasoning ?? "")) chunks.push(chunk([{ text: piece, thought: true }]));
  for (const piece of pieces(turn.text ?? "")) chunks.push(chunk([{ text: piece }]));
  const calls = (turn.toolCalls ?? []).map((call, index) => ({
    functionCall: { id: call.id, name: call.name, args: call.arguments },
    ...(index === 0 ? { thoughtSignature: `sig-${call.id}` } : {}),
  }));
  if (calls.length > 0) chunks.push(chunk(calls));
  chunks.push(chunk([{ text: "" }], "STOP"));
  return chunks;
}

export function geminiFrames(turn: ScriptedTurn, model = "test-model"): string[] {
  return geminiChunks(turn, model).map((chunk) => frame(chunk));
}

/** The same turn as a non-streaming `generateContent` body: the chunks' parts in one candidate. */
export function geminiBody(turn: ScriptedTurn, model = "test-model"): Record<string, unknown> {
  const chunks = geminiChunks(turn, model) as Array<{ candidates: Array<{ content: { parts: Array<Record<string, unknown>> } }> }>;
  const parts: Array<Record<string, unknown>> = [];
  for (const chunk of chunks) {
    for (const part of chunk.candidates[0].content.parts) {
      const last = parts[parts.length - 1];
      if (typeof part.text === "string" && last && typeof last.text === "string" && last.thought === part.thought) last.text += part.text;
      else if (part.text !== "") parts.push({ ...part });
    }
  }
  const last = chunks[chunks.length - 1] as Record<string, any>;
  return { ...last, candidates: [{ ...last.candidates[0], content: { parts, role: "model" } }] };
}

import type { AssistantMessage, Message } from "../messages.js";
import type { JsonSchema } from "../model/model.js";
import { type ClientToolDeclaration, type ClientToolOutput, parseClientTool, UiRequestError } from "../ui/requests.js";
import { badRequest } from "./http-errors.js";
import { validSessionId } from "./session-id.js";

export { SESSION_ID_PATTERN, validSessionId } from "./session-id.js";

/** A validated `POST /v1/chat/completions` request. */
export interface ChatRequest {
  /** The text of the last user (or `task-delegation`) message: the run's input. */
  input: string;
  /** True when the input came from a `task-delegation` message (a KAOS parent agent). */
  delegated: boolean;
  /** Messages before the input (system messages dropped), for requests without a session. */
  history: Message[];
  model?: string;
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  includeUsage: boolean;
  /** From the body's `session_id` or the `X-Session-ID` header. */
  sessionId?: string;
  /** `response_format` `json_schema` (its schema) or `json_object` (any object): the answer must match. */
  output?: JsonSchema;
  /** The request's `tools`: the client's own tools, offered to the model beside the agent's. */
  clientTools: ClientToolDeclaration[];
  /** Trailing `tool` messages: the results of the client tool calls the session's run stopped at. */
  toolOutputs?: Record<string, ClientToolOutput>;
  /** `progress_blocks` (or the `X-Progress-Blocks` header): KAOS's progress blocks in the stream, overriding the server's setting. */
  progressBlocks?: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The schema a `response_format` asks for; `text` (or none) asks for nothing. */
function responseFormat(value: unknown): JsonSchema | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw badRequest("response_format must be an object", "response_format", "invalid_type");
  if (value.type === "text") return undefined;
  if (value.type === "json_object") return { type: "object" };
  if (value.type === "json_schema") {
    const spec = value.json_schema;
    if (!isObject(spec) || !isObject(spec.schema)) {
      throw badRequest("response_format.json_schema.schema must be a JSON Schema object", "response_format.json_schema.schema", "invalid_type");
    }
    return spec.schema;
  }
  throw badRequest(`response_format.type must be "text", "json_object" or "json_schema", got ${JSON.stringify(value.type)}`, "response_format.type", "invalid_value");
}

/**
 * The body fields of `POST /v1/chat/completions`, by what the server does with them. Any other
 * field (set to something other than null) is answered with a 400 naming it: the agent's own
 * configuration decides its model and sampling, and a field silently ignored would be a setting
 * the client believes took effect.
 */
export const CHAT_FIELDS = {
  /** Read and honoured. */
  honoured: ["model", "messages", "stream", "stream_options", "response_format", "session_id", "n", "logprobs", "progress_blocks"],
  /** Accepted and ignored: bookkeeping for the caller or a provider's cache, no effect on the answer. */
  ignored: ["user", "metadata", "store", "safety_identifier", "prompt_cache_key"],
  /** Client-side tools: accepted as before (their support is another issue's). */
  tools: ["tools", "tool_choice", "parallel_tool_calls"],
} as const;

const acceptedFields = new Set<string>([...CHAT_FIELDS.honoured, ...CHAT_FIELDS.ignored, ...CHAT_FIELDS.tools]);

/** Rejects a field the server would not honour: an unknown one, or `n`/`logprobs` asking for more than one plain answer. */
function checkFields(request: Record<string, unknown>): void {
  for (const [field, value] of Object.entries(request)) {
    if (value === null || acceptedFields.has(field)) continue;
    throw badRequest(
      `${field} is not supported by this agent server: its agent's own configuration decides the model and its settings (accepted fields: ${[...CHAT_FIELDS.honoured, ...CHAT_FIELDS.ignored].join(", ")})`,
      field,
      "unsupported_parameter",
    );
  }
  if (request.n !== undefined && request.n !== null && request.n !== 1) {
    throw badRequest(`n must be 1, got ${JSON.stringify(request.n)}: the agent gives one answer per request`, "n", "unsupported_parameter");
  }
  if (request.logprobs !== undefined && request.logprobs !== null && request.logprobs !== false) {
    throw badRequest(`logprobs must be false, got ${JSON.stringify(request.logprobs)}: the agent's answer carries no log probabilities`, "logprobs", "unsupported_parameter");
  }
}

const roles = new Set(["system", "developer", "user", "assistant", "tool", "task-delegation"]);
function contentText(content: unknown, param: string, nullable: boolean): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) {
    if (nullable) return "";
    throw badRequest(`${param} is required`, param, "invalid_type");
  }
  if (!Array.isArray(content)) throw badRequest(`${param} must be a string or an array of content parts`, param, "invalid_type");
  let text = "";
  content.forEach((part, index) => {
    const partParam = `${param}[${index}]`;
    if (typeof part !== "object" || part === null || typeof (part as { type?: unknown }).type !== "string") {
      throw badRequest(`${partParam} must be a content part object with a type`, partParam, "invalid_type");
    }
    const typed = part as { type: string; text?: unknown };
    if (typed.type === "text") {
      if (typeof typed.text !== "string") throw badRequest(`${partParam}.text must be a string`, `${partParam}.text`, "invalid_type");
      text += typed.text;
    } else {
      throw badRequest(`${partParam}.type "${typed.type}" is not supported (only text parts)`, `${partParam}.type`, "unsupported_content");
    }
  });
  return text;
}

/**
 * Validates a parsed request body. Throws an `HttpError` (400) naming the bad field.
 * The input is the last `user` or `task-delegation` message.
 */
export function parseChatRequest(body: unknown, headerSessionId: string | undefined, headerProgressBlocks?: string): ChatRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("the request body must be a JSON object", null, "invalid_body");
  const request = body as Record<string, unknown>;
  if (request.messages === undefined) throw badRequest("messages is required", "messages", "missing_messages");
  checkFields(request);
  if (!Array.isArray(request.messages)) throw badRequest("messages must be an array", "messages", "invalid_type");
  if (request.messages.length === 0) throw badRequest("messages must not be empty", "messages", "empty_messages");
  if (request.model !== undefined && typeof request.model !== "string") throw badRequest("model must be a string", "model", "invalid_type");
  if (request.stream !== undefined && request.stream !== null && typeof request.stream !== "boolean") {
    throw badRequest("stream must be a boolean", "stream", "invalid_type");
  }
  let sessionId: string | undefined;
  if (request.session_id !== undefined && request.session_id !== null) sessionId = validSessionId(request.session_id, "session_id");
  else if (headerSessionId !== undefined && headerSessionId !== "") sessionId = validSessionId(headerSessionId, "X-Session-ID");

  const parsed: Array<{ role: string; text: string; raw: Record<string, unknown> }> = request.messages.map((message, index) => {
    const param = `messages[${index}]`;
    if (typeof message !== "object" || message === null || Array.isArray(message)) throw badRequest(`${param} must be an object`, param, "invalid_type");
    const raw = message as Record<string, unknown>;
    if (typeof raw.role !== "string") throw badRequest(`${param}.role must be a string`, `${param}.role`, "invalid_type");
    if (!roles.has(raw.role)) throw badRequest(`${param}.role "${raw.role}" is not one of ${[...roles].join(", ")}`, `${param}.role`, "invalid_role");
    return { role: raw.role, text: contentText(raw.content, `${param}.content`, raw.role === "assistant"), raw };
  });

  let inputIndex = -1;
  for (let index = parsed.length - 1; index >= 0; index--) {
    if (parsed[index].role === "user" || parsed[index].role === "task-delegation") {
      inputIndex = index;
      break;
    }
  }
  if (inputIndex < 0) throw badRequest("messages must contain a user message", "messages", "no_user_message");
  const input = parsed[inputIndex];
  if (input.text.trim() === "") throw badRequest(`messages[${inputIndex}].content must not be empty`, `messages[${inputIndex}].content`, "empty_content");

  const history: Message[] = [];
  for (const message of parsed.slice(0, inputIndex)) {
    if (message.role === "user" || message.role === "task-delegation") history.push({ role: "user", content: message.text });
    // Tool-call turns from another runtime cannot be replayed faithfully; their text is kept.
    else if (message.role === "assistant" && message.text !== "") history.push({ role: "assistant", content: [{ type: "text", text: message.text }] } satisfies AssistantMessage);
  }
  const streamOptions = request.stream_options as { include_usage?: unknown } | undefined | null;
  if (streamOptions !== undefined && streamOptions !== null && (typeof streamOptions !== "object" || Array.isArray(streamOptions))) {
    throw badRequest("stream_options must be an object", "stream_options", "invalid_type");
  }
  const clientTools = clientToolsOf(request.tools);
  const toolOutputs = trailingToolOutputs(request.messages as unknown[]);
  if (toolOutputs && sessionId === undefined) {
    throw badRequest("tool results continue the run that asked for them: send its session (session_id or X-Session-ID)", "session_id", "missing_session_id");
  }
  let progressBlocks: boolean | undefined;
  if (request.progress_blocks !== undefined && request.progress_blocks !== null) {
    if (typeof request.progress_blocks !== "boolean") throw badRequest("progress_blocks must be a boolean", "progress_blocks", "invalid_type");
    progressBlocks = request.progress_blocks;
  } else if (headerProgressBlocks !== undefined && headerProgressBlocks !== "") {
    const value = headerProgressBlocks.trim().toLowerCase();
    if (value !== "true" && value !== "false") throw badRequest(`X-Progress-Blocks must be true or false, got ${JSON.stringify(headerProgressBlocks)}`, "X-Progress-Blocks", "invalid_value");
    progressBlocks = value === "true";
  }
  return {
    input: input.text,
    delegated: input.role === "task-delegation",
    history,
    model: request.model as string | undefined,
    stream: request.stream === true,
    includeUsage: streamOptions?.include_usage === true,
    sessionId,
    output: responseFormat(request.response_format),
    ...(progressBlocks !== undefined ? { progressBlocks } : {}),
    clientTools,
    ...(toolOutputs ? { toolOutputs } : {}),
  };
}

/** The request's `tools` (`[{ type: "function", function: { name, description?, parameters? } }]`), checked. */
function clientToolsOf(value: unknown): ClientToolDeclaration[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw badRequest("tools must be an array", "tools", "invalid_type");
  const names = new Set<string>();
  return value.map((entry, index) => {
    const param = `tools[${index}]`;
    if (!isObject(entry) || entry.type !== "function") throw badRequest(`${param} must be { type: "function", function: { name, description?, parameters? } }`, param, "invalid_type");
    try {
      const tool = parseClientTool(entry.function, `${param}.function`);
      if (names.has(tool.name)) throw badRequest(`${param}.function.name "${tool.name}" is declared twice`, `${param}.function.name`, "duplicate_tool");
      names.add(tool.name);
      return tool;
    } catch (error) {
      if (error instanceof UiRequestError) throw badRequest(error.message, error.param, error.code);
      throw error;
    }
  });
}

/** The `tool` messages at the end of the conversation (the client's tool results), by call id. */
function trailingToolOutputs(messages: unknown[]): Record<string, ClientToolOutput> | undefined {
  let outputs: Record<string, ClientToolOutput> | undefined;
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index] as Record<string, unknown>;
    if (message.role !== "tool") break;
    const param = `messages[${index}]`;
    if (typeof message.tool_call_id !== "string" || message.tool_call_id === "") throw badRequest(`${param}.tool_call_id must be a non-empty string`, `${param}.tool_call_id`, "invalid_type");
    outputs ??= {};
    outputs[message.tool_call_id] = { output: contentText(message.content, `${param}.content`, false), isError: false };
  }
  return outputs;
}

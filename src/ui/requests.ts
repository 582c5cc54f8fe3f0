/**
 * Request parsers for the UI protocols: the body `useChat`'s `DefaultChatTransport` sends
 * (`{ id, messages: UIMessage[], trigger, messageId? }`) and AG-UI's `RunAgentInput`. Each returns
 * what the run needs (a new input, or the decisions / tool results that continue a stopped run), or
 * throws a `UiRequestError` (a 400) naming the field that is wrong.
 */
import type { ApprovalDecision } from "../loop/checkpoint.js";
import { SESSION_ID_PATTERN, sessionIdProblem } from "../server/session-id.js";

/** A request the parser refuses: `status` 400, `param` the field, `code` a stable name. */
export class UiRequestError extends Error {
  override name = "UiRequestError";
  readonly status = 400;
  constructor(
    message: string,
    readonly param: string | null,
    readonly code: string,
  ) {
    super(message);
  }
}


/** A tool result the client supplies for a call of the run (a client-side tool). */
export interface ClientToolOutput {
  output: string;
  isError: boolean;
}

/** A client-side tool the request declares (AG-UI `tools`, chat completions `tools`). */
export interface ClientToolDeclaration {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What a UI request asks the run to do: a new input, or the continuation of a stopped run. */
export type UiRunIntent =
  | { kind: "input"; input: string }
  | { kind: "continue"; decisions: Record<string, ApprovalDecision>; toolOutputs: Record<string, ClientToolOutput> };

export interface UiChatRequest {
  sessionId: string;
  intent: UiRunIntent;
  /** The assistant message a continuation goes on with (its id, for `start.messageId`). */
  messageId?: string;
  /** Tool calls the client shows already (a continued message's), not announced again. */
  knownToolCallIds: string[];
}

export interface AgUiRequest {
  sessionId: string;
  runId: string;
  intent: UiRunIntent;
  tools: ClientToolDeclaration[];
  /** The input as received. */
  input: Record<string, unknown>;
  /** Its messages (each an object with a string id and role), for `MESSAGES_SNAPSHOT`. */
  messages: Array<Record<string, unknown>>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const fail = (message: string, param: string | null, code = "invalid_request"): never => {
  throw new UiRequestError(message, param, code);
};

function sessionIdOf(value: unknown, param: string): string {
  // The server's one rule for session ids (src/server/session-id.ts).
  if (typeof value !== "string" || !SESSION_ID_PATTERN.test(value)) fail(sessionIdProblem(param), param, "invalid_session_id");
  return value as string;
}

function stringField(value: unknown, param: string, { optional = false, nonEmpty = false } = {}): string | undefined {
  if (value === undefined && optional) return undefined;
  if (typeof value !== "string") return fail(`${param} must be a string`, param, "invalid_type");
  if (nonEmpty && value === "") return fail(`${param} must not be empty`, param, "invalid_value");
  return value;
}

function arrayField(value: unknown, param: string): unknown[] {
  if (!Array.isArray(value)) return fail(`${param} must be an array`, param, "invalid_type");
  return value;
}

const isToolPartType = (type: string) => type === "dynamic-tool" || type.startsWith("tool-");

/**
 * Parses what `useChat` sends. The last message decides: a user message is a new input (its text
 * parts); an assistant message continues the run it came from with the approval responses
 * (`addToolApprovalResponse`) and the client tools' outputs (`addToolOutput`) it carries.
 */
export function parseUiChatRequest(body: unknown): UiChatRequest {
  if (!isObject(body)) fail("the request body must be a JSON object { id, messages, trigger }", null, "invalid_body");
  const request = body as Record<string, unknown>;
  const sessionId = sessionIdOf(request.id, "id");
  if (request.trigger !== undefined && request.trigger !== "submit-message") {
    if (request.trigger === "regenerate-message") fail("trigger \"regenerate-message\" is not supported: the chat's history is the session's log; send a new message instead", "trigger", "unsupported_trigger");
    fail(`trigger must be "submit-message", got ${JSON.stringify(request.trigger)}`, "trigger", "invalid_value");
  }
  const messageId = stringField(request.messageId, "messageId", { optional: true });
  const messages = arrayField(request.messages, "messages");
  if (messages.length === 0) fail("messages must not be empty", "messages", "empty_messages");
  messages.forEach((message, index) => {
    const param = `messages[${index}]`;
    if (!isObject(message)) fail(`${param} must be an object { id, role, parts }`, param, "invalid_type");
    const typed = message as Record<string, unknown>;
    stringField(typed.id, `${param}.id`);
    if (typed.role !== "user" && typed.role !== "assistant" && typed.role !== "system") fail(`${param}.role must be "user", "assistant" or "system"`, `${param}.role`, "invalid_role");
    arrayField(typed.parts, `${param}.parts`).forEach((part, partIndex) => {
      const partParam = `${param}.parts[${partIndex}]`;
      if (!isObject(part) || typeof part.type !== "string") fail(`${partParam} must be an object with a string type`, partParam, "invalid_type");
    });
  });
  const lastIndex = messages.length - 1;
  const last = messages[lastIndex] as { id: string; role: string; parts: Array<Record<string, unknown>> };
  const param = `messages[${lastIndex}]`;
  if (last.role === "user") {
    let input = "";
    last.parts.forEach((part, index) => {
      if (part.type === "text") input += stringField(part.text, `${param}.parts[${index}].text`);
    });
    if (input.trim() === "") fail(`${param} (the user's message) has no text`, `${param}.parts`, "empty_content");
    return { sessionId, intent: { kind: "input", input }, knownToolCallIds: [] };
  }
  if (last.role !== "assistant") fail(`the last message must be the user's (a new input) or the assistant's (answers to its approvals), got ${last.role}`, `${param}.role`, "invalid_role");
  const decisions: Record<string, ApprovalDecision> = {};
  const toolOutputs: Record<string, ClientToolOutput> = {};
  const known: string[] = [];
  last.parts.forEach((part, index) => {
    const type = part.type as string;
    if (!isToolPartType(type)) return;
    const partParam = `${param}.parts[${index}]`;
    const toolCallId = stringField(part.toolCallId, `${partParam}.toolCallId`, { nonEmpty: true }) as string;
    known.push(toolCallId);
    if (part.state === "approval-responded") {
      const approval = part.approval;
      if (!isObject(approval) || typeof approval.approved !== "boolean") fail(`${partParam}.approval must be { id, approved: boolean, reason? }`, `${partParam}.approval`, "invalid_decisions");
      const { approved, reason } = approval as { approved: boolean; reason?: unknown };
      if (reason !== undefined && typeof reason !== "string") fail(`${partParam}.approval.reason must be a string`, `${partParam}.approval.reason`, "invalid_decisions");
      decisions[toolCallId] = approved ? { approve: true } : { approve: false, reason: reason as string | undefined };
    } else if (part.state === "output-available" || part.state === "output-error") {
      // Outputs of every call the message shows; the run takes those of the calls it left to the client.
      toolOutputs[toolCallId] = part.state === "output-error" ? { output: String(part.errorText ?? "error"), isError: true } : { output: outputText(part.output), isError: false };
    }
  });
  if (Object.keys(decisions).length === 0 && Object.keys(toolOutputs).length === 0) {
    fail(`${param} is the assistant's but carries no approval response (addToolApprovalResponse) or tool output to continue with`, param, "nothing_to_continue");
  }
  return { sessionId, intent: { kind: "continue", decisions, toolOutputs }, messageId: messageId ?? last.id, knownToolCallIds: known };
}

function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  return JSON.stringify(output ?? null);
}

/** The text of an AG-UI message's content (a string, or text parts). */
function agUiContent(content: unknown, param: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return fail(`${param} must be a string or an array of content parts`, param, "invalid_type");
  let text = "";
  content.forEach((part, index) => {
    if (!isObject(part) || typeof part.type !== "string") fail(`${param}[${index}] must be a content part with a type`, `${param}[${index}]`, "invalid_type");
    if ((part as Record<string, unknown>).type === "text") text += stringField((part as Record<string, unknown>).text, `${param}[${index}].text`);
  });
  return text;
}

/** A client tool declaration (AG-UI `tools[i]`), checked. */
export function parseClientTool(value: unknown, param: string): ClientToolDeclaration {
  if (!isObject(value)) return fail(`${param} must be an object { name, description, parameters? }`, param, "invalid_type");
  const name = stringField(value.name, `${param}.name`, { nonEmpty: true }) as string;
  if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(name)) fail(`${param}.name must be 1-128 letters, digits, '_', '.', ':' or '-'`, `${param}.name`, "invalid_value");
  const description = value.description === undefined ? "" : (stringField(value.description, `${param}.description`) as string);
  const parameters = value.parameters === undefined || value.parameters === null ? { type: "object", properties: {} } : value.parameters;
  if (!isObject(parameters)) fail(`${param}.parameters must be a JSON Schema object`, `${param}.parameters`, "invalid_type");
  return { name, description, parameters: parameters as Record<string, unknown> };
}

/**
 * Parses an AG-UI `RunAgentInput`. `threadId` is the session. With `resume` entries, the run that
 * stopped goes on with their decisions (payload `{ approve: true }` or `{ approve: false, reason? }`;
 * a `cancelled` entry is a rejection); a last `tool` message answers a client tool's call; else the
 * last user message is the input.
 */
export function parseRunAgentInput(body: unknown): AgUiRequest {
  if (!isObject(body)) fail("the request body must be a RunAgentInput object { threadId, runId, messages }", null, "invalid_body");
  const input = body as Record<string, unknown>;
  const sessionId = sessionIdOf(input.threadId, "threadId");
  const runId = stringField(input.runId, "runId", { nonEmpty: true }) as string;
  if (runId.length > 200) fail("runId must be at most 200 characters", "runId", "invalid_value");
  const messages = arrayField(input.messages, "messages");
  const tools = input.tools === undefined ? [] : arrayField(input.tools, "tools").map((tool, index) => parseClientTool(tool, `tools[${index}]`));
  const names = new Set<string>();
  for (const [index, tool] of tools.entries()) {
    if (names.has(tool.name)) fail(`tools[${index}].name "${tool.name}" is declared twice`, `tools[${index}].name`, "duplicate_tool");
    names.add(tool.name);
  }
  if (input.context !== undefined) arrayField(input.context, "context");
  messages.forEach((message, index) => {
    const param = `messages[${index}]`;
    if (!isObject(message)) fail(`${param} must be an object { id, role, content }`, param, "invalid_type");
    stringField((message as Record<string, unknown>).id, `${param}.id`);
    stringField((message as Record<string, unknown>).role, `${param}.role`);
  });
  const decisions: Record<string, ApprovalDecision> = {};
  if (input.resume !== undefined) {
    arrayField(input.resume, "resume").forEach((entry, index) => {
      const param = `resume[${index}]`;
      if (!isObject(entry)) fail(`${param} must be an object { interruptId, status, payload? }`, param, "invalid_type");
      const typed = entry as Record<string, unknown>;
      const id = stringField(typed.interruptId, `${param}.interruptId`, { nonEmpty: true }) as string;
      if (decisions[id]) fail(`${param}.interruptId "${id}" is answered twice`, `${param}.interruptId`, "invalid_decisions");
      if (typed.status === "cancelled") {
        decisions[id] = { approve: false, reason: "cancelled" };
        return;
      }
      if (typed.status !== "resolved") fail(`${param}.status must be "resolved" or "cancelled"`, `${param}.status`, "invalid_value");
      const payload = typed.payload;
      if (!isObject(payload) || typeof payload.approve !== "boolean") fail(`${param}.payload must be { approve: true } or { approve: false, reason? }`, `${param}.payload`, "invalid_decisions");
      const { approve, reason } = payload as { approve: boolean; reason?: unknown };
      if (reason !== undefined && typeof reason !== "string") fail(`${param}.payload.reason must be a string`, `${param}.payload.reason`, "invalid_decisions");
      decisions[id] = approve ? { approve: true } : { approve: false, reason: reason as string | undefined };
    });
  }
  // Tool messages after the last assistant message answer its client tool calls.
  const toolOutputs: Record<string, ClientToolOutput> = {};
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index] as Record<string, unknown>;
    if (message.role !== "tool") break;
    const param = `messages[${index}]`;
    const toolCallId = stringField(message.toolCallId, `${param}.toolCallId`, { nonEmpty: true }) as string;
    const error = message.error === undefined ? undefined : stringField(message.error, `${param}.error`);
    toolOutputs[toolCallId] = { output: error ?? agUiContent(message.content, `${param}.content`), isError: error !== undefined };
  }
  if (Object.keys(decisions).length > 0 || Object.keys(toolOutputs).length > 0) return { sessionId, runId, tools, input, messages: messages as Array<Record<string, unknown>>, intent: { kind: "continue", decisions, toolOutputs } };
  if (messages.length === 0) fail("messages must not be empty (the last one is the user's input)", "messages", "empty_messages");
  const last = messages[messages.length - 1] as Record<string, unknown>;
  const param = `messages[${messages.length - 1}]`;
  if (last.role !== "user") fail(`the last message must be the user's (the input) or tool results, got role ${JSON.stringify(last.role)}`, `${param}.role`, "invalid_role");
  const text = agUiContent(last.content, `${param}.content`);
  if (text.trim() === "") fail(`${param}.content must not be empty`, `${param}.content`, "empty_content");
  return { sessionId, runId, tools, input, messages: messages as Array<Record<string, unknown>>, intent: { kind: "input", input: text } };
}

import { textOf } from "../messages.js";
import type { Tool, ToolContext, ToolResultValue } from "../tools/tool.js";
import { TASK_PARAMETERS, taskOf } from "./local.js";
import { delegationFailed, remoteCallFailed, remoteCallSignal, traceHeadersOf } from "./remote.js";

/** A message in the OpenAI chat shape, as a KAOS agent reads it. */
export interface ChatMessage {
  role: string;
  content: string;
}

export interface KaosAgentToolOptions {
  /** The remote agent's name: the tool is `delegate_to_<name>`. */
  name: string;
  /** The agent's base URL; the request goes to `<url>/v1/chat/completions`. */
  url: string;
  description?: string;
  /**
   * Conversation context sent before the task: a list, or a function of the tool call's context.
   * Default: the user and assistant text of the calling run's conversation (`context.messages`).
   * Only the last `maxContextMessages` are sent.
   */
  contextMessages?: ChatMessage[] | ((context: ToolContext) => ChatMessage[] | Promise<ChatMessage[]>);
  /** Default 10. */
  maxContextMessages?: number;
  /** Extra request headers (for example an authorization header). */
  headers?: Record<string, string>;
  /** Milliseconds before the request is abandoned (default: no limit besides the run's signal). */
  timeoutMs?: number;
  /** Tool name override (default `delegate_to_<name>`). */
  toolName?: string;
}

/** The user and assistant text of the conversation so far, as KAOS context messages. */
function conversationText(context: ToolContext): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const message of context.messages ?? []) {
    if (message.role !== "user" && message.role !== "assistant") continue;
    const content = textOf(message);
    if (content.trim()) messages.push({ role: message.role, content });
  }
  return messages;
}

/** The role KAOS uses for the delegated task itself. */
export const TASK_DELEGATION_ROLE = "task-delegation";

const shorten = (text: string, max = 300) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * A tool that delegates to a remote KAOS-style agent: POST `<url>/v1/chat/completions` with the
 * recent context messages plus `{"role": "task-delegation", "content": task}`; the answer is
 * `choices[0].message.content`. Every failure (network, HTTP status, malformed body, abort) is a
 * `[Delegation failed: <reason>]` error result; the call never throws.
 */
export function kaosAgentTool(options: KaosAgentToolOptions): Tool<{ task: string }> {
  if (!options?.name) throw new TypeError("kaosAgentTool: a name is required");
  if (typeof options.url !== "string" || options.url === "") throw new TypeError(`kaosAgentTool: agent "${options.name}" needs a url`);
  let endpoint: string;
  try {
    endpoint = new URL(`${options.url.replace(/\/+$/, "")}/v1/chat/completions`).toString();
  } catch {
    throw new TypeError(`kaosAgentTool: "${options.url}" is not a valid URL`);
  }
  const limit = options.maxContextMessages ?? 10;

  return {
    name: options.toolName ?? `delegate_to_${options.name}`,
    description: options.description ?? `Delegate a task to the remote agent "${options.name}".`,
    parameters: TASK_PARAMETERS,
    kind: "kaos",
    action: "delegate",
    async execute(args, context): Promise<ToolResultValue | string> {
      const task = taskOf(args);
      if (task === undefined) return delegationFailed(`delegation to "${options.name}" needs a non-empty "task" string`);
      const signal = remoteCallSignal(context.signal, options.timeoutMs);
      try {
        const source = options.contextMessages;
        const all = typeof source === "function" ? await source(context) : (source ?? conversationText(context));
        const recent = limit > 0 ? all.slice(-limit) : [];
        const messages: ChatMessage[] = [...recent, { role: TASK_DELEGATION_ROLE, content: task }];
        context.progress({ status: "sending", agent: options.name, url: endpoint });
        const response = await fetch(endpoint, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json", ...options.headers, ...traceHeadersOf(context.services) },
          body: JSON.stringify({ model: options.name, messages, stream: false }),
          signal,
        });
        const body = await response.text();
        if (!response.ok) return delegationFailed(`HTTP ${response.status} from ${endpoint}${body ? `: ${shorten(body)}` : ""}`);
        let parsed: unknown;
        try {
          parsed = JSON.parse(body);
        } catch {
          return delegationFailed(`the response from ${endpoint} is not JSON: ${shorten(body)}`);
        }
        const content = (parsed as { choices?: Array<{ message?: { content?: unknown } }> })?.choices?.[0]?.message?.content;
        if (typeof content !== "string") return delegationFailed(`the response from ${endpoint} has no choices[0].message.content`);
        return content;
      } catch (error) {
        return remoteCallFailed(error, context.signal, signal, endpoint, options.timeoutMs);
      }
    },
  };
}

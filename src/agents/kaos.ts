import { ToolInterrupt } from "../loop/checkpoint.js";
import type { LoopEvent } from "../loop/events.js";
import { textOf } from "../messages.js";
import type { Tool, ToolContext, ToolResultValue } from "../tools/tool.js";
import { TASK_PARAMETERS, taskOf } from "./local.js";
import { delegationFailed, remoteCallFailed, remoteCallSignal, traceHeadersOf } from "./remote.js";
import { approvalRequiredOf, remoteDecisions, remoteResumeOf, type WireApprovalRequired, wireDecisions } from "./remote-approvals.js";

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

/**
 * A worker's chat completion: its answer text, a `[Delegation failed]` result, or the calls it waits
 * on (`finish_reason: "approval_required"`, an agentloop worker).
 */
async function completionOf(response: Response, url: string, nest: (event: LoopEvent) => void): Promise<string | ToolResultValue | (WireApprovalRequired & { session_id: string })> {
  // Streamed (the request asks for it): progress blocks and answer deltas are nested live.
  if (response.ok && response.body && (response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    // Loaded with the first streamed answer: agentloop/agents imports no npm package at load time.
    const { readCompletionStream } = await import("./kaos-stream.js");
    const streamed = await readCompletionStream(response.body, response.headers.get("x-session-id") ?? url, nest);
    if ("error" in streamed) return delegationFailed(`the stream from ${url} ended with an error: ${streamed.error}`);
    if (streamed.finishReason === undefined) return delegationFailed(`the stream from ${url} ended before its answer finished`);
    return streamed.finishReason === "approval_required" ? approvalsAsked(streamed.approvalRequired, url) : streamed.answer;
  }
  const body = await response.text();
  if (!response.ok) return delegationFailed(`HTTP ${response.status} from ${url}${body ? `: ${shorten(body)}` : ""}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return delegationFailed(`the response from ${url} is not JSON: ${shorten(body)}`);
  }
  const completion = parsed as { choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }>; approval_required?: unknown };
  if (completion?.choices?.[0]?.finish_reason === "approval_required") return approvalsAsked(completion.approval_required, url);
  const content = completion?.choices?.[0]?.message?.content;
  if (typeof content !== "string") return delegationFailed(`the response from ${url} has no choices[0].message.content`);
  return content;
}

function approvalsAsked(value: unknown, url: string): ToolResultValue | (WireApprovalRequired & { session_id: string }) {
  const report = approvalRequiredOf(value);
  if (!report || typeof report.session_id !== "string") return delegationFailed(`the response from ${url} asks for approvals without a valid approval_required report`);
  return report as WireApprovalRequired & { session_id: string };
}

/** The role KAOS uses for the delegated task itself. */
export const TASK_DELEGATION_ROLE = "task-delegation";

const shorten = (text: string, max = 300) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * A tool that delegates to a remote KAOS-style agent: POST `<url>/v1/chat/completions` with the
 * recent context messages plus `{"role": "task-delegation", "content": task}` and `stream: true`;
 * the worker's progress blocks and answer deltas are nested in the caller's stream as they come
 * (a worker answering plain JSON is read as `choices[0].message.content`). An agentloop worker
 * that stops for approvals has them asked through the caller's run (src/agents/remote-approvals.ts:
 * the run waits, or stops INTERRUPTED and the resumed call sends the decisions to the worker's
 * `/v1/approvals`). Every other failure (network, HTTP status, malformed body, abort) is a
 * `[Delegation failed: <reason>]` error result.
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
  const approvalsEndpoint = endpoint.replace(/\/chat\/completions$/, "/approvals");

  return {
    name: options.toolName ?? `delegate_to_${options.name}`,
    description: options.description ?? `Delegate a task to the remote agent "${options.name}".`,
    parameters: TASK_PARAMETERS,
    kind: "kaos",
    action: "delegate",
    async execute(args, context): Promise<ToolResultValue | string> {
      const resumed = remoteResumeOf(context, "kaos");
      const task = taskOf(args);
      if (task === undefined && !resumed) return delegationFailed(`delegation to "${options.name}" needs a non-empty "task" string`);
      const signal = remoteCallSignal(context.signal, options.timeoutMs);
      const headers = { "content-type": "application/json", accept: "text/event-stream, application/json", ...options.headers, ...traceHeadersOf(context.services) };
      const nest = (event: LoopEvent) => context.nested(options.name, event);
      const post = (url: string, body: unknown) => fetch(url, { method: "POST", headers, body: JSON.stringify(body), signal });
      try {
        let response: Response;
        let url = endpoint;
        if (resumed) {
          // A worker that stopped for approvals: the decisions go to its /v1/approvals.
          url = approvalsEndpoint;
          context.progress({ status: "sending decisions", agent: options.name, url });
          response = await post(url, { session_id: resumed.wait.sessionId, decisions: wireDecisions(resumed.decisions), stream: true });
        } else {
          const source = options.contextMessages;
          const all = typeof source === "function" ? await source(context) : (source ?? conversationText(context));
          const recent = limit > 0 ? all.slice(-limit) : [];
          const messages: ChatMessage[] = [...recent, { role: TASK_DELEGATION_ROLE, content: task as string }];
          context.progress({ status: "sending", agent: options.name, url });
          response = await post(url, { model: options.name, messages, stream: true });
        }
        for (;;) {
          const answer = await completionOf(response, url, nest);
          if (typeof answer === "string" || !("pending" in answer)) return answer;
          // An agentloop worker stopped for approvals: ask for them here, then send the decisions back.
          const wait = { protocol: "kaos" as const, agent: options.name, sessionId: answer.session_id, checkpointId: answer.checkpoint_id };
          const decisions = await remoteDecisions(wait, answer, context);
          url = approvalsEndpoint;
          response = await post(url, { session_id: answer.session_id, decisions: wireDecisions(decisions), stream: true });
        }
      } catch (error) {
        if (error instanceof ToolInterrupt) throw error;
        return remoteCallFailed(error, context.signal, signal, endpoint, options.timeoutMs);
      }
    },
  };
}

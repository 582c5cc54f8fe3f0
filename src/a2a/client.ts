import { randomUUID } from "node:crypto";
import {
  type AgentCard,
  type Artifact,
  type Message,
  type Part,
  Role,
  type StreamResponse,
  type Task,
  TaskState,
} from "@a2a-js/sdk";
import { type Client, ClientFactory } from "@a2a-js/sdk/client";
import { TASK_PARAMETERS, taskOf } from "../agents/local.js";
import { delegationFailed, reasonOf, remoteCallFailed, remoteCallSignal, traceHeadersOf } from "../agents/remote.js";
import { approvalRequiredOf, remoteDecisions, remoteResumeOf, type WireApprovalRequired, wireDecisions } from "../agents/remote-approvals.js";
import { type ApprovalDecision, type RemoteWait, ToolInterrupt } from "../loop/checkpoint.js";
import { AgentLoopError } from "../errors.js";
import type { LoopEvent } from "../loop/events.js";
import type { McpElicitationHandler } from "../mcp/config.js";
import { loopEventOf } from "./events.js";
import type { Tool, ToolContext, ToolResultValue } from "../tools/tool.js";

export interface A2AAgentToolOptions {
  /**
   * Where the agent card is: a base URL (the card is read from `/.well-known/agent-card.json`)
   * or the card's full URL (ending in `.json`).
   */
  cardUrl: string;
  /** The agent's name for the tool `delegate_to_<name>` (default: the card's name). */
  name?: string;
  /** Tool description (default: the card's description). */
  description?: string;
  /** Extra headers for every A2A call (for example an authorization header). */
  headers?: Record<string, string>;
  /** Milliseconds before a delegation is abandoned (default: no limit besides the run's signal). */
  timeoutMs?: number;
  /**
   * Asks a person when the remote agent (not agentloop: no `approval_required` data part) puts its
   * task in `input-required`: its question comes as an elicitation (MCP's form-mode shape, one
   * `answer` string field; `agentloop chat` asks it inline). An accepted answer is sent on the task
   * and the delegation goes on; without a handler, or declined, the call ends with
   * `[Delegation failed: ... asks for input: <question>]`.
   */
  onElicitation?: McpElicitationHandler;
}

/** What a streamed A2A update becomes: the `data` of a `tool-progress` event. */
export interface A2AProgress {
  source: "a2a";
  agent: string;
  /** `task` (created), `status` (a status update) or `artifact` (an artifact update). */
  update: "task" | "status" | "artifact" | "message";
  taskId?: string;
  /** `submitted`, `working`, `completed`, `failed`, `canceled`, `rejected`, `input-required`, `auth-required`. */
  state?: string;
  /** Text carried by the update (status message or artifact chunk). */
  text?: string;
  artifact?: string;
}

const stateNames: Partial<Record<TaskState, string>> = {
  [TaskState.TASK_STATE_SUBMITTED]: "submitted",
  [TaskState.TASK_STATE_WORKING]: "working",
  [TaskState.TASK_STATE_COMPLETED]: "completed",
  [TaskState.TASK_STATE_FAILED]: "failed",
  [TaskState.TASK_STATE_CANCELED]: "canceled",
  [TaskState.TASK_STATE_REJECTED]: "rejected",
  [TaskState.TASK_STATE_INPUT_REQUIRED]: "input-required",
  [TaskState.TASK_STATE_AUTH_REQUIRED]: "auth-required",
};
const stateName = (state: TaskState | undefined) => (state === undefined ? "unknown" : (stateNames[state] ?? "unknown"));
const terminalStates = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

function partsText(parts: Part[] | undefined): string {
  let text = "";
  for (const part of parts ?? []) {
    const content = part.content;
    if (content?.$case === "text") text += content.value;
    else if (content?.$case === "data") text += JSON.stringify(content.value);
  }
  return text;
}

/** A tool name the providers accept: letters, digits, `_` and `-`. */
function toolSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "") || "agent";
}

async function resolveClient(options: A2AAgentToolOptions): Promise<{ client: Client; card: AgentCard }> {
  const url = options.cardUrl;
  try {
    new URL(url);
  } catch {
    throw new AgentLoopError("configuration", `a2aAgentTool: "${url}" is not a valid agent card URL`);
  }
  const factory = new ClientFactory();
  // A full card URL is fetched as is; a base URL gets the well-known card path.
  const client = new URL(url).pathname.endsWith(".json") ? await factory.createFromUrl(url, "") : await factory.createFromUrl(url);
  const card = await client.getAgentCard();
  return { client, card };
}

/** Folds a task's events into its state, the texts of its artifacts and of its last status message. */
class TaskProgress {
  taskId?: string;
  contextId?: string;
  state?: TaskState;
  statusText = "";
  /** Answer chunks went out as nested text deltas. */
  streamed = false;
  /** The data parts of the last status message (an agentloop worker's `approval_required` is one). */
  statusData: unknown[] = [];
  messageText = "";
  private readonly artifacts = new Map<string, { name: string; text: string }>();

  artifactText(): string {
    return [...this.artifacts.values()].map((artifact) => artifact.text).join("\n");
  }

  addArtifact(artifact: Artifact | undefined, append: boolean): string {
    if (!artifact) return "";
    const text = partsText(artifact.parts);
    const key = artifact.artifactId || artifact.name || String(this.artifacts.size);
    const existing = this.artifacts.get(key);
    if (existing && append) existing.text += text;
    else this.artifacts.set(key, { name: artifact.name, text });
    return text;
  }

  addTask(task: Task): void {
    this.taskId = task.id || this.taskId;
    this.contextId = task.contextId || this.contextId;
    if (task.status) this.addStatus(task.status.state, task.status.message?.parts);
    for (const artifact of task.artifacts ?? []) this.addArtifact(artifact, false);
  }

  /** A status (of a task or an update): its state, its text when it has some, its data parts. */
  addStatus(state: TaskState | undefined, parts: Part[] | undefined): string {
    this.state = state ?? this.state;
    // An agentloop worker's loop event is not status text (its progress block has a text part of its own).
    const text = partsText(parts?.filter((part) => !(part.content?.$case === "data" && part.content.value?.agentloop_event !== undefined)));
    if (text) this.statusText = text;
    this.statusData = (parts ?? []).flatMap((part) => (part.content?.$case === "data" ? [part.content.value] : []));
    return text;
  }

  /** The calls an agentloop worker waits on (the `approval_required` data part of an input-required status). */
  approvalRequired(): WireApprovalRequired | undefined {
    if (this.state !== TaskState.TASK_STATE_INPUT_REQUIRED) return undefined;
    for (const value of this.statusData) {
      const report = approvalRequiredOf((value as { approval_required?: unknown } | null)?.approval_required);
      if (report) return report;
    }
    return undefined;
  }

  /** The answer: the artifacts' text, else the last status message, else a direct message. */
  answer(): string {
    return this.artifactText() || this.statusText || this.messageText;
  }
}

/**
 * A tool `delegate_to_<name>` that sends its task to a remote A2A agent, found by its agent card.
 * The task goes out with `message/stream` (or `message/send` when the card says the agent does
 * not stream); each task, status and artifact update becomes a `tool-progress` event
 * (`A2AProgress`); the answer is the text of the task's artifacts (else of its final status
 * message). W3C trace context from `context.services.traceHeaders()` is sent with the request.
 *
 * The card is read now (its name and description name the tool); if it cannot be read and
 * `name` is given, the tool is still created and reads it on its first call. Every failure of
 * a call becomes `[Delegation failed: <reason>]` with `isError`; a call never throws.
 */
export async function a2aAgentTool(options: A2AAgentToolOptions): Promise<Tool<{ task: string }>> {
  if (!options?.cardUrl) throw new TypeError("a2aAgentTool: cardUrl is required");
  let resolved: Promise<{ client: Client; card: AgentCard }> | undefined = resolveClient(options);
  let card: AgentCard | undefined;
  try {
    card = (await resolved).card;
  } catch (error) {
    resolved = undefined;
    if (!options.name) {
      throw new AgentLoopError("network", `a2aAgentTool: could not read the agent card at ${options.cardUrl}: ${reasonOf(error)}`, {
        cause: error,
      });
    }
  }
  const agentName = options.name ?? card?.name ?? "agent";
  const connect = () => {
    resolved ??= resolveClient(options).catch((error) => {
      resolved = undefined;
      throw error;
    });
    return resolved;
  };

  return {
    name: `delegate_to_${toolSafe(agentName)}`,
    description: options.description ?? card?.description ?? `Delegate a task to the remote agent "${agentName}".`,
    parameters: TASK_PARAMETERS,
    kind: "a2a",
    action: "delegate",
    async execute(args, context): Promise<ToolResultValue | string> {
      const resumed = remoteResumeOf(context, "a2a");
      const task = taskOf(args);
      if (task === undefined && !resumed) return delegationFailed(`delegation to "${agentName}" needs a non-empty "task" string`);
      const signal = remoteCallSignal(context.signal, options.timeoutMs);
      const progress = new TaskProgress();
      let client: Client | undefined;
      try {
        const connection = await connect();
        client = connection.client;
        // A task that waited for approvals gets the decisions; otherwise the task is a new one.
        const first = resumed ? decisionsMessage(resumed.wait, resumed.decisions) : textMessage(task as string);
        return await delegate(connection.client, connection.card, first, agentName, options, context, signal, progress);
      } catch (error) {
        if (error instanceof ToolInterrupt) throw error;
        if (client && progress.taskId && signal.aborted) cancelQuietly(client, progress.taskId);
        return remoteCallFailed(error, context.signal, signal, `"${agentName}"`, options.timeoutMs);
      }
    },
  };
}

function cancelQuietly(client: Client, taskId: string): void {
  client.cancelTask({ tenant: "", id: taskId, metadata: undefined }, { signal: AbortSignal.timeout(2_000) }).catch(() => {});
}

const newMessage = (parts: Part[], taskId = "", contextId = ""): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

function textMessage(text: string, taskId?: string, contextId?: string): Message {
  return newMessage([{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }], taskId, contextId);
}

/** What a remote agent's question asks for, as an elicitation: one answer. */
const ANSWER_WORDS = { accept: "empty", decline: "declined", cancel: "cancelled" } as const;
const ANSWER_SCHEMA = { type: "object", properties: { answer: { type: "string", title: "Answer" } }, required: ["answer"] };

/** A message on a task waiting in `input-required` with the decisions for its pending calls (an agentloop worker). */
function decisionsMessage(wait: RemoteWait, decisions: Record<string, ApprovalDecision>): Message {
  const part: Part = { content: { $case: "data", value: { decisions: wireDecisions(decisions) } }, metadata: undefined, filename: "", mediaType: "application/json" };
  return newMessage([part], wait.taskId, wait.contextId);
}

/**
 * Sends the message and follows the task to its end. A task that asks for approvals
 * (`input-required` with an `approval_required` data part) has them asked here (or the run stopped
 * for them: `ToolInterrupt`), then gets the decisions on the task, and is followed again.
 */
async function delegate(
  client: Client,
  card: AgentCard,
  first: Message,
  agentName: string,
  options: A2AAgentToolOptions,
  context: ToolContext,
  signal: AbortSignal,
  progress: TaskProgress,
): Promise<ToolResultValue | string> {
  const requestOptions = { signal, serviceParameters: { ...options.headers, ...traceHeadersOf(context.services) } };
  const report = (data: Omit<A2AProgress, "source" | "agent">) => context.progress({ source: "a2a", agent: agentName, ...data } satisfies A2AProgress);
  let message = first;
  for (;;) {
    const request = { tenant: "", message, configuration: undefined, metadata: undefined };
    if (card.capabilities?.streaming === false) {
      const result = await client.sendMessage(request, requestOptions);
      if ("role" in result && "parts" in result) progress.messageText = partsText(result.parts);
      else progress.addTask(result as Task);
    } else {
      for await (const event of client.sendMessageStream(request, requestOptions)) {
        handleStreamEvent(event, progress, report, (nested) => context.nested(agentName, nested));
        if (progress.state !== undefined && terminalStates.has(progress.state)) break;
      }
    }
    const asked = progress.approvalRequired();
    if (!asked && progress.state === TaskState.TASK_STATE_INPUT_REQUIRED && progress.taskId && options.onElicitation) {
      const answer = await options.onElicitation({ server: agentName, message: progress.statusText, requestedSchema: ANSWER_SCHEMA }, { signal });
      const text = answer.action === "accept" ? answer.content?.answer : undefined;
      if (typeof text !== "string" || text === "") return delegationFailed(`"${agentName}" asks for input and the answer was ${ANSWER_WORDS[answer.action]}: ${progress.statusText}`);
      message = textMessage(text, progress.taskId, progress.contextId);
      progress.state = undefined;
      continue;
    }
    if (!asked || !progress.taskId) return outcome(progress, agentName);
    const wait: RemoteWait = { protocol: "a2a", agent: agentName, taskId: progress.taskId, contextId: progress.contextId, checkpointId: asked.checkpoint_id };
    message = decisionsMessage(wait, await remoteDecisions(wait, asked, context));
    progress.state = undefined;
    progress.streamed = false;
  }
}

/**
 * Folds one streamed update into the task's progress, reports it (`tool-progress`), and hands the
 * worker's live events to `nest` as loop events: answer chunks as `text-delta`, an agentloop
 * worker's tool calls and progress blocks (`agentloop_event` data parts, src/a2a/events.ts) as
 * themselves, and, from any agent, a working status text as a `tool-progress` of the worker.
 */
function handleStreamEvent(event: StreamResponse, progress: TaskProgress, report: (data: Omit<A2AProgress, "source" | "agent">) => void, nest: (event: LoopEvent) => void): void {
  const payload = event.payload;
  switch (payload?.$case) {
    case "task":
      progress.addTask(payload.value);
      report({ update: "task", taskId: payload.value.id, state: stateName(progress.state) });
      break;
    case "statusUpdate": {
      const update = payload.value;
      progress.taskId = update.taskId || progress.taskId;
      progress.contextId = update.contextId || progress.contextId;
      const text = progress.addStatus(update.status?.state, update.status?.message?.parts);
      const runId = progress.taskId ?? "";
      for (const data of progress.statusData) {
        const nested = loopEventOf((data as { agentloop_event?: unknown } | null)?.agentloop_event, runId);
        if (nested) nest(nested);
      }
      report({ update: "status", taskId: progress.taskId, state: stateName(progress.state), ...(text ? { text } : {}) });
      break;
    }
    case "artifactUpdate": {
      const update = payload.value;
      const streamedBefore = progress.streamed;
      const text = progress.addArtifact(update.artifact, update.append);
      // An answer streamed in chunks ends with the whole answer again (append false, last chunk): not a delta.
      const whole = !update.append && update.lastChunk && streamedBefore;
      if (text !== "" && !whole) {
        progress.streamed = true;
        nest({ type: "text-delta", runId: update.taskId || progress.taskId || "", turn: 0, delta: text });
      }
      report({ update: "artifact", taskId: update.taskId || progress.taskId, artifact: update.artifact?.name, text });
      break;
    }
    case "message": {
      progress.messageText = partsText(payload.value.parts);
      // A direct message answers without a task: it is the final word.
      progress.state = TaskState.TASK_STATE_COMPLETED;
      report({ update: "message", text: progress.messageText });
      break;
    }
    default:
      break;
  }
}

function outcome(progress: TaskProgress, agentName: string): ToolResultValue | string {
  const state = progress.state;
  const answer = progress.answer();
  if (state === TaskState.TASK_STATE_COMPLETED) return answer;
  if (state === undefined || !terminalStates.has(state)) {
    return delegationFailed(`the stream from "${agentName}" ended before its task finished (last state: ${stateName(state)})`);
  }
  const detail = progress.statusText || answer;
  return delegationFailed(`the remote task of "${agentName}" ended as ${stateName(state)}${detail ? `: ${detail}` : ""}`);
}

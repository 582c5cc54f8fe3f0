import { randomUUID } from "node:crypto";
import { A2A_VERSION_HEADER, type AgentCard, formatSSEEvent, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  type ExecutionEventBus,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  type RequestContext,
  validateVersion,
} from "@a2a-js/sdk/server";
import { ContentTypeNotSupportedError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import type { ApprovalDecision } from "../loop/checkpoint.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import { wireEventOf } from "../a2a/events.js";
import { approvalParts, dataPart, decisionsOf } from "./a2a-approvals.js";
import { approvalRequiredOf } from "./chat-stream.js";
import { HttpError } from "./http-errors.js";
import { a2aParamsProblem, invalidParamsError, isJsonContentType, subscribedTaskId, withReturnedPageSize } from "./a2a-validation.js";
import { answerOf } from "./chat-stream.js";

/**
 * Runs one A2A message through the agent: the context id is the session. With `decisions` (a
 * message on an `input-required` task) it resumes the session's run stopped for approvals, as
 * `POST /v1/approvals` does (rejecting with its `HttpError` when nothing waits or the decisions are refused).
 */
export type RunTask = (task: {
  input: string;
  sessionId: string;
  signal: AbortSignal;
  onEvent: (event: LoopEvent) => void;
  decisions?: Record<string, ApprovalDecision>;
}) => Promise<RunResult>;

const textPart = (text: string): Part => ({ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" });

function agentMessage(content: string | Part[], taskId: string, contextId: string): Message {
  const parts = typeof content === "string" ? [textPart(content)] : content;
  return { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

function textOf(message: Message): string {
  return message.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
}

/** The agent behind the A2A protocol: each message is a task; cancel aborts its run. */
class LoopAgentExecutor implements AgentExecutor {
  private readonly running = new Map<string, { controller: AbortController; canceled: boolean }>();

  constructor(private readonly runTask: RunTask) {}

  execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = context;
    const now = () => new Date().toISOString();
    const status = (state: TaskState, content?: string | Part[]) =>
      AgentEvent.statusUpdate({ taskId, contextId, status: { state, message: content === undefined ? undefined : agentMessage(content, taskId, contextId), timestamp: now() }, metadata: undefined });
    // A stream starts with the task, also a message on a task that exists (an answer to
    // input-required): that task is working again (its client must not read it as still waiting).
    const task: Task = context.task
      ? { ...context.task, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() } }
      : { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() }, artifacts: [], history: [context.userMessage], metadata: undefined };
    bus.publish(AgentEvent.task(task));
    // A message on a task waiting for approvals answers them: its decisions resume the run.
    const waiting = context.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    let decisions: Record<string, ApprovalDecision> | undefined;
    try {
      decisions = waiting ? decisionsOf(context.userMessage) : undefined;
    } catch (error) {
      this.askAgain(context, bus, status, (error as Error).message);
      return;
    }
    const input = textOf(context.userMessage);
    if (waiting && !decisions) {
      this.askAgain(context, bus, status, 'the task waits for approvals: send a message on it with a data part { "decisions": { "<tool_call_id>": { "approve": true } } }');
      return;
    }
    if (!decisions && input.trim() === "") {
      bus.publish(status(TaskState.TASK_STATE_REJECTED, "the message has no text part"));
      bus.finished();
      return;
    }
    bus.publish(status(TaskState.TASK_STATE_WORKING));
    const entry = { controller: new AbortController(), canceled: false };
    this.running.set(taskId, entry);
    const artifactId = randomUUID();
    const artifact = (text: string, append: boolean, lastChunk: boolean) =>
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId, name: "answer", description: "", parts: [textPart(text)], metadata: undefined, extensions: [] },
        append,
        lastChunk,
        metadata: undefined,
      });
    let streamed = 0;
    // Progress blocks become working status updates; answer text streams as chunks of one artifact.
    const onEvent = (event: LoopEvent) => {
      if (entry.canceled) return;
      if (event.type === "text-delta") {
        if (event.delta !== "") bus.publish(artifact(event.delta, streamed++ > 0, false));
        return;
      }
      // Tool calls, waves and sub-agents' events travel as data parts (src/a2a/events.ts); a
      // progress block keeps its JSON text too, for clients that read only text.
      const wire = wireEventOf(event);
      if (!wire) return;
      const parts = [dataPart({ agentloop_event: wire })];
      if (event.type === "progress") {
        const { step, max_steps, action, target } = event;
        parts.unshift(textPart(JSON.stringify({ type: "progress", step, max_steps, action, target })));
      }
      bus.publish(status(TaskState.TASK_STATE_WORKING, parts));
    };
    try {
      const result = await this.runTask({ input, sessionId: contextId, signal: entry.controller.signal, onEvent, decisions });
      if (entry.canceled) return;
      const approvals = approvalRequiredOf(result, contextId);
      if (approvals) {
        bus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED, approvalParts(approvals, textPart)));
      } else if (result.state === "ABORTED") {
        bus.publish(status(TaskState.TASK_STATE_CANCELED, result.reason));
      } else if (result.state === "FAILED") {
        bus.publish(status(TaskState.TASK_STATE_FAILED, result.error?.message ?? result.reason));
      } else {
        const text = answerOf(result);
        // The whole answer replaces the streamed chunks (append false), so the task holds one part.
        bus.publish(artifact(text, false, true));
        bus.publish(status(TaskState.TASK_STATE_COMPLETED, text));
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // Decisions the checkpoint refuses (an unknown call, other arguments): the task still waits for them.
      if (decisions && error instanceof HttpError && error.status === 400) this.askAgain(context, bus, status, message, false);
      else if (!entry.canceled) bus.publish(status(TaskState.TASK_STATE_FAILED, message));
    } finally {
      this.running.delete(taskId);
      bus.finished();
    }
  };

  /**
   * The task stays `input-required`: its last status message (the pending calls) again, after a
   * text part saying what was wrong with the answer.
   */
  private askAgain(context: RequestContext, bus: ExecutionEventBus, status: (state: TaskState, content: Part[]) => ReturnType<typeof AgentEvent.statusUpdate>, problem: string, finish = true): void {
    const asked = context.task?.status?.message?.parts ?? [];
    bus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED, [textPart(`Not resumed: ${problem}`), ...asked.filter((part) => part.content?.$case === "data")]));
    if (finish) bus.finished();
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const entry = this.running.get(taskId);
    if (entry) {
      entry.canceled = true;
      entry.controller.abort("task canceled through A2A");
    }
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: "",
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
  };
}

/** States after which a task never changes. */
const TERMINAL_STATES = new Set<TaskState>([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

/**
 * The answer to an A2A request whose Content-Type is not JSON (ContentTypeNotSupportedError,
 * -32005), or undefined when it is JSON or not given.
 */
export function a2aContentTypeRejection(request: Request): Response | undefined {
  if (isJsonContentType(request.headers.get("content-type"))) return undefined;
  const legacy = (request.headers.get(A2A_VERSION_HEADER) ?? "0.3") === "0.3";
  const error = new ContentTypeNotSupportedError(`Content-Type ${request.headers.get("content-type")} is not supported; send application/json`);
  const mapped = legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error);
  return Response.json({ jsonrpc: "2.0", id: null, error: mapped });
}

/** The A2A JSON-RPC endpoint as a web-standard handler (A2A 1.0, and 0.3 for clients that send no `A2A-Version`). */
export function createA2AHandler(card: () => AgentCard, runTask: RunTask): (request: Request, body: unknown) => Promise<Response> {
  const store = new InMemoryTaskStore();
  const requestHandler = new DefaultRequestHandler(card(), store, new LoopAgentExecutor(runTask));
  const current = new JsonRpcTransportHandler(requestHandler);
  const legacy = new LegacyJsonRpcTransportHandler(requestHandler);
  return async (request, body) => {
    const requestedVersion = request.headers.get(A2A_VERSION_HEADER) ?? undefined;
    const useLegacy = (requestedVersion ?? "0.3") === "0.3";
    const envelope = typeof body === "object" && body !== null ? (body as { id?: string | number; method?: unknown; params?: unknown }) : {};
    const id = envelope.id ?? null;
    const method = typeof envelope.method === "string" ? envelope.method : "";
    // Checked here because the SDK's handler reads these leniently (a negative historyLength, Date.parse).
    const problem = a2aParamsProblem(method, envelope.params);
    if (problem) return Response.json({ jsonrpc: "2.0", id, error: invalidParamsError(problem, useLegacy) });
    const headers: Record<string, string> = {};
    request.headers.forEach((value, key) => {
      headers[key] = value;
    });
    try {
      const context = defaultServerCallContextBuilder({ extensions: undefined, user: undefined, headers, requestedVersion });
      validateVersion(context.requestedVersion, card(), "JSONRPC");
      const subscribed = subscribedTaskId(method, envelope.params);
      if (subscribed !== undefined && TERMINAL_STATES.has((await store.load(subscribed, context))?.status?.state as TaskState)) {
        throw new UnsupportedOperationError(`task ${subscribed} has ended: there are no more updates to subscribe to`);
      }
      const outcome = await (useLegacy ? legacy : current).handle(body as Record<string, unknown>, context);
      if (outcome && typeof (outcome as AsyncGenerator<unknown>)[Symbol.asyncIterator] === "function") {
        const iterator = outcome as AsyncGenerator<unknown>;
        const encoder = new TextEncoder();
        const stream = new ReadableStream<Uint8Array>({
          async pull(controller) {
            try {
              const next = await iterator.next();
              if (next.done) controller.close();
              else controller.enqueue(encoder.encode(formatSSEEvent(next.value)));
            } catch (error) {
              const mapped = useLegacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error);
              controller.enqueue(encoder.encode(`event: error\ndata: ${JSON.stringify({ jsonrpc: "2.0", id, error: mapped })}\n\n`));
              controller.close();
            }
          },
          async cancel() {
            await iterator.return?.(undefined);
          },
        });
        return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" } });
      }
      return Response.json(withReturnedPageSize(method, outcome));
    } catch (error) {
      const mapped = useLegacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error);
      return Response.json({ jsonrpc: "2.0", id, error: mapped });
    }
  };
}

// Sub-agents of a coding session: spawn_agent, send_input, wait, close_agent. Each child is an
// Agent with its own history, working in the parent's workspace (or a folder of it), running in
// the background until the parent waits for it. The delegation rules (depth, run options handed
// down) are those of agentloop/agents.
import { childRunOptions, delegationPath, delegationRefusal, errorResult } from "../agents/local.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { Run } from "../loop/run.js";
import type { Message } from "../messages.js";
import { defineTool, type Tool, type ToolContext } from "../tools/tool.js";
import type { Workspace } from "./workspace.js";

/** Sub-agents may not spawn their own unless this is raised (the top-level agent is depth 0). */
export const DEFAULT_SUBAGENT_DEPTH = 1;
/** Model calls per input a sub-agent gets when spawn_agent gives no max_turns. */
export const DEFAULT_SUBAGENT_TURNS = 50;

/** What a sub-agent runs: an agent (`run(input, options)`) built for its workspace and depth. */
export type SubagentFactory = (spec: { id: string; task: string; workspace: Workspace; depth: number; maxTurns: number }) => { run(input: string, options: Record<string, unknown>): Run }

interface Handle {
  id: string;
  agent: { run(input: string, options: Record<string, unknown>): Run };
  run: Run;
  /** Events of the current run already forwarded to the parent. */
  forwarded: number;
  controller: AbortController;
  history: Message[];
  turns: number;
  status: "running" | "completed" | "failed" | "closed";
  result?: RunResult;
  /** The run options its runs get (depth, path, approvals...). */
  options: Record<string, unknown>;
}

function describe(handle: Handle): string {
  const result = handle.result;
  if (handle.status === "running") return `${handle.id}: running`;
  if (!result) return `${handle.id}: ${handle.status}`;
  return `${handle.id}: ${handle.status} (${result.state}, ${result.turns} model call${result.turns === 1 ? "" : "s"})`;
}

/**
 * The sub-agents of one session and the four tools that drive them. `tools(depth)` gives the tools
 * for an agent at `depth`; an agent at the maximum depth gets none.
 */
export class SubagentManager {
  private readonly handles = new Map<string, Handle>();
  private counter = 0;

  constructor(
    private readonly workspace: Workspace,
    private readonly factory: SubagentFactory,
    readonly maxDepth = DEFAULT_SUBAGENT_DEPTH,
  ) {}

  /** The sub-agents started so far, with their status. */
  list(): Array<{ id: string; status: Handle["status"] }> {
    return [...this.handles.values()].map(({ id, status }) => ({ id, status }));
  }

  /** Aborts every running sub-agent and waits for them to stop. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.handles.values()].map((handle) => this.close(handle)));
  }

  private async close(handle: Handle): Promise<void> {
    if (handle.status === "running") handle.controller.abort("closed by close_agent");
    await handle.run;
    handle.status = "closed";
  }

  private start(handle: Handle, input: string): void {
    handle.forwarded = 0;
    handle.status = "running";
    handle.result = undefined;
    handle.run = handle.agent.run(input, { ...handle.options, history: handle.history, signal: handle.controller.signal });
    void handle.run.then((result) => {
      handle.result = result;
      handle.turns += result.turns;
      handle.history = result.messages.filter((message) => message.role !== "system");
      if (handle.status === "running") handle.status = result.state === "COMPLETED" ? "completed" : "failed";
    });
  }

  private find(id: unknown): Handle | string {
    const handle = typeof id === "string" ? this.handles.get(id) : undefined;
    if (handle) return handle;
    const known = [...this.handles.keys()];
    return `No sub-agent "${String(id)}". ${known.length > 0 ? `Known: ${known.join(", ")}` : "None was spawned yet"}.`;
  }

  tools(depth: number): Tool[] {
    if (depth >= this.maxDepth) return [];
    const spawn = defineTool<{ task: string; working_dir?: string; max_turns?: number }>({
      name: "spawn_agent",
      description:
        "Starts a sub-agent on a scoped task. It works in the same files (or in working_dir, a folder of the workspace) with its own conversation, in the background: call wait to get its answer. Returns its agent_id.",
      parameters: {
        type: "object",
        properties: {
          task: { type: "string", description: "The task, stated completely: the sub-agent sees nothing else" },
          working_dir: { type: "string", description: "A folder of the workspace to work in (default: the workspace root)" },
          max_turns: { type: "integer", minimum: 1, description: `Model calls it may make (default ${DEFAULT_SUBAGENT_TURNS})` },
        },
        required: ["task"],
        additionalProperties: false,
      },
      kind: "agent",
      action: "delegate",
      truncation: { maxChars: 20_000, mode: "head_tail" },
      execute: async ({ task, working_dir, max_turns = DEFAULT_SUBAGENT_TURNS }, context) => {
        if (typeof task !== "string" || task.trim() === "") return errorResult("spawn_agent: task must be a non-empty string");
        const id = `agent_${this.counter + 1}`;
        const path = delegationPath(context);
        const refusal = delegationRefusal(id, context, path, this.maxDepth);
        if (refusal) return errorResult(refusal);
        let workspace = this.workspace;
        if (working_dir !== undefined) {
          try {
            workspace = await this.workspace.scoped(working_dir);
          } catch (error) {
            return errorResult(`spawn_agent: working_dir: ${(error as Error).message}`);
          }
        }
        this.counter++;
        const controller = new AbortController();
        // The parent's abort stops its sub-agents too.
        if (context.signal.aborted) controller.abort(context.signal.reason);
        else context.signal.addEventListener("abort", () => controller.abort(context.signal.reason), { once: true });
        const agent = this.factory({ id, task, workspace, depth: context.depth + 1, maxTurns: max_turns });
        // Sub-agents run in the background: their approvals wait for a person (never interrupt the parent).
        const options = { ...childRunOptions(context, path), onApproval: "wait" } as Record<string, unknown>;
        const handle: Handle = { id, agent, run: undefined as unknown as Run, forwarded: 0, controller, history: [], turns: 0, status: "running", options };
        this.handles.set(id, handle);
        this.start(handle, task);
        return `Spawned ${id}${working_dir !== undefined ? ` in ${workspace.root}` : ""}: running. Call wait with agent_id "${id}" for its answer.`;
      },
    });
    const sendInput = defineTool<{ agent_id: string; message: string }>({
      name: "send_input",
      description: "Sends a message to a sub-agent: a running one reads it after its current step; a finished one starts working on it, with its history.",
      parameters: {
        type: "object",
        properties: { agent_id: { type: "string" }, message: { type: "string" } },
        required: ["agent_id", "message"],
        additionalProperties: false,
      },
      kind: "agent",
      execute: ({ agent_id, message }) => {
        const handle = this.find(agent_id);
        if (typeof handle === "string") return errorResult(`send_input: ${handle}`);
        if (handle.status === "closed") return errorResult(`send_input: ${handle.id} was closed`);
        if (handle.status === "running") {
          handle.run.steer(message);
          return `Sent to ${handle.id} (running): it reads the message after its current step.`;
        }
        this.start(handle, message);
        return `Sent to ${handle.id}: it is running again on the message.`;
      },
    });
    const wait = defineTool<{ agent_id: string }>({
      name: "wait",
      description: "Waits for a sub-agent to finish and returns its answer, whether it succeeded and the model calls it used.",
      parameters: { type: "object", properties: { agent_id: { type: "string" } }, required: ["agent_id"], additionalProperties: false },
      kind: "agent",
      action: "delegate",
      truncation: { maxChars: 20_000, mode: "head_tail" },
      execute: async ({ agent_id }, context) => {
        const handle = this.find(agent_id);
        if (typeof handle === "string") return errorResult(`wait: ${handle}`);
        await this.forward(handle, context);
        const result = await handle.run;
        const success = result.state === "COMPLETED" && handle.status !== "closed";
        const content = `${describe(handle)}\nsuccess: ${success}\nturns used: ${handle.turns}\n\n${result.text || `(no answer: ${result.reason})`}`;
        return { content, isError: !success, structured: { agent_id: handle.id, success, turns_used: handle.turns, state: result.state } };
      },
    });
    const close = defineTool<{ agent_id: string }>({
      name: "close_agent",
      description: "Stops a sub-agent (a running one is aborted) and returns its final status.",
      parameters: { type: "object", properties: { agent_id: { type: "string" } }, required: ["agent_id"], additionalProperties: false },
      kind: "agent",
      execute: async ({ agent_id }) => {
        const handle = this.find(agent_id);
        if (typeof handle === "string") return errorResult(`close_agent: ${handle}`);
        const was = handle.status;
        await this.close(handle);
        return `Closed ${handle.id} (it was ${was}${handle.result ? `; its run ended ${handle.result.state}` : ""}).`;
      },
    });
    return [spawn, sendInput, wait, close];
  }

  /** Forwards the sub-agent's events not yet seen into the parent's stream, as they come, until its run ends. */
  private async forward(handle: Handle, context: ToolContext): Promise<void> {
    let index = 0;
    for await (const event of handle.run as AsyncIterable<LoopEvent>) {
      if (index++ < handle.forwarded) continue;
      handle.forwarded = index;
      context.nested(handle.id, event);
    }
  }
}

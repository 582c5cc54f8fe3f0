// The tools of a durable run: each tool call checkpointed as DBOS steps.
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { Toolset } from "../loop/types.js";
import type { Tool, ToolContext, ToolOutput } from "../tools/tool.js";
import { cancellable, watched } from "./cancellation.js";
import { flushJournal } from "./journal.js";
import { afterModelCall, openModelCalls, replayedStarts } from "./model-calls.js";

/** The result of a tool call that was running when the process died and is not idempotent. */
export const INTERRUPTED = "Interrupted: the process stopped while this tool ran; it was not retried";

type StoredCall = { output: unknown } | { threw: string; name: string } | { interrupted: true };

/** A tool whose `execute` is checkpointed inside a workflow (and the tool itself outside one). */
export function durableTool<Args>(tool: Tool<Args>): Tool<Args> {
  const wrapped = Object.create(tool) as Tool<Args>;
  wrapped.execute = (args, context) => (DBOS.isWithinWorkflow() ? recordedCall(tool, args, context) : tool.execute(args, context));
  return wrapped;
}

/**
 * One step per call of an idempotent tool. Two steps per call of the others, their ids taken together (DBOS numbers steps as they are called, so concurrent
 * calls of a wave keep their order on replay): `started` is recorded before the tool runs; if it was
 * already recorded and the result was not, the call was in flight when the process died.
 */
async function recordedCall<Args>(tool: Tool<Args>, args: Args, context: ToolContext): Promise<ToolOutput> {
  const runId = DBOS.workflowID;
  let fresh = false;
  flushJournal();
  // An idempotent tool in flight at a crash runs again, as one that had not started: no marker needed.
  if (tool.idempotent === true) {
    const before = afterModelCall(runId);
    return storedOutput(
      await watched(
        runId,
        callName(tool, context),
        DBOS.runStep(
          async () => {
            await before;
            return callTool(tool, args, context);
          },
          { name: `tool:${tool.name}` },
        ),
      ),
    );
  }
  // The marker goes with the record of the model call that asked for this call, when that call is
  // still open (calls a wave starts together all join it); else it is a step of its own. Either way
  // the tool runs once the marker is recorded (`marked`).
  const open = runId ? openModelCalls.get(runId) : undefined;
  const replayed = runId ? replayedStarts.get(runId) : undefined;
  let started: Promise<unknown>;
  if (open && !open.closing) {
    open.started.push(context.toolCallId);
    fresh = true;
    queueMicrotask(() => open.close());
    started = Promise.resolve();
  } else if (replayed?.has(context.toolCallId)) {
    replayed.delete(context.toolCallId);
    started = Promise.resolve();
  } else {
    const before = afterModelCall(runId);
    started = DBOS.runStep(
      async () => {
        await before;
        fresh = true;
        return context.idempotencyKey;
      },
      { name: `tool-started:${tool.name}` },
    );
  }
  const marked = started.then(() => afterModelCall(runId));
  const result = DBOS.runStep(
    async (): Promise<StoredCall> => {
      await marked;
      if (!fresh) return { interrupted: true };
      return callTool(tool, args, context);
    },
    { name: `tool:${tool.name}` },
  );
  marked.catch(() => undefined);
  return storedOutput(await watched(runId, callName(tool, context), result));
}

/** A call as `resume` names what still runs: `tool "pay" (call c1)`. */
function callName(tool: Tool<any>, context: ToolContext): string {
  return `tool "${tool.name}" (call ${context.toolCallId})`;
}

function callTool<Args>(tool: Tool<Args>, args: Args, context: ToolContext): Promise<StoredCall> {
  return cancellable(() => executeTool(tool, args, context));
}

async function executeTool<Args>(tool: Tool<Args>, args: Args, context: ToolContext): Promise<StoredCall> {
  try {
    const output = await tool.execute(args, context);
    return { output: output === undefined ? null : JSON.parse(JSON.stringify(output) ?? "null") };
  } catch (error) {
    return { threw: error instanceof Error ? error.message : String(error), name: error instanceof Error ? error.name : "Error" };
  }
}

function storedOutput(stored: StoredCall): ToolOutput {
  if ("interrupted" in stored) return { content: INTERRUPTED, isError: true };
  if ("threw" in stored) {
    const error = new Error(stored.threw);
    error.name = stored.name;
    throw error;
  }
  return stored.output;
}

export function durableToolset(toolset: Toolset): Toolset {
  let version = Number.NaN;
  let tools: readonly Tool<any>[] = [];
  return {
    name: toolset.name,
    get toolsVersion() {
      return toolset.toolsVersion;
    },
    get loadedTools() {
      if (version !== toolset.toolsVersion) {
        version = toolset.toolsVersion;
        tools = toolset.loadedTools.map((tool) => durableTool(tool));
      }
      return tools;
    },
  };
}

export function isToolset(source: Tool<any> | Toolset): source is Toolset {
  return typeof (source as Tool<any>).execute !== "function" && typeof (source as Toolset).toolsVersion === "number";
}

import type { ToolContext, ToolOutput } from "../tools/tool.js";
import type { PromptyAgent, PromptyToolSpec } from "./types.js";

/** Runs one tool by name: gets the model's arguments (bindings applied) and the call's context. */
export type PromptyToolHandler = (args: Record<string, unknown>, context: ToolContext) => ToolOutput | Promise<ToolOutput>;

/** What a kind handler gets besides the arguments. */
export interface PromptyKindCall {
  /** The prompty file that declared the tool. */
  agent: PromptyAgent;
  /** The inputs that prompty runs with (defaults applied). */
  inputs: Record<string, unknown>;
  context: ToolContext;
}

/** Runs every tool of one kind (`function`, `prompty`, `mcp`, or a custom kind). */
export type PromptyKindHandler = (tool: PromptyToolSpec, args: Record<string, unknown>, call: PromptyKindCall) => ToolOutput | Promise<ToolOutput>;

const nameHandlers = new Map<string, PromptyToolHandler>();
const kindHandlers = new Map<string, PromptyKindHandler>();

/**
 * Layer 1 of the dispatch: a handler for one tool name, used by every prompty that declares a
 * tool of that name (it wins over any kind handler). Returns a function that unregisters it.
 */
export function registerTool(name: string, handler: PromptyToolHandler): () => void {
  if (!name || typeof name !== "string") throw new TypeError("registerTool: a tool name is required");
  if (typeof handler !== "function") throw new TypeError(`registerTool: the handler for "${name}" must be a function`);
  nameHandlers.set(name, handler);
  return () => {
    if (nameHandlers.get(name) === handler) nameHandlers.delete(name);
  };
}

/**
 * Layer 2 of the dispatch: a handler for every tool of a kind without a name handler. Replaces
 * the built-in handler of `prompty` and `mcp` tools while registered. Returns a function that
 * unregisters it.
 */
export function registerToolHandler(kind: string, handler: PromptyKindHandler): () => void {
  if (!kind || typeof kind !== "string") throw new TypeError("registerToolHandler: a tool kind is required");
  if (typeof handler !== "function") throw new TypeError(`registerToolHandler: the handler for kind "${kind}" must be a function`);
  kindHandlers.set(kind, handler);
  return () => {
    if (kindHandlers.get(kind) === handler) kindHandlers.delete(kind);
  };
}

export function getTool(name: string): PromptyToolHandler | undefined {
  return nameHandlers.get(name);
}

export function getToolHandler(kind: string): PromptyKindHandler | undefined {
  return kindHandlers.get(kind);
}

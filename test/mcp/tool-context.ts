// Calling a tool the way the loop does: a tool context a test (or a bench) can inspect and override.
import assert from "node:assert/strict";
import type { Tool, ToolContext, ToolResultValue } from "../../src/tools/tool.js";

export function toolContext(overrides: Partial<ToolContext> = {}): ToolContext & { progressEvents: unknown[] } {
  const progressEvents: unknown[] = [];
  return {
    signal: new AbortController().signal,
    runId: "run_test",
    toolCallId: "call_1",
    idempotencyKey: "run_test:call_1",
    toolName: "test",
    step: 1,
    inputs: {},
    depth: 0,
    agentPath: [],
    progress: (data) => progressEvents.push(data),
    nested: () => undefined,
    services: {},
    progressEvents,
    ...overrides,
  };
}

export function find(tools: Tool[], name: string): Tool {
  const tool = tools.find((candidate) => candidate.name === name);
  assert.ok(tool, `tool ${name} not exposed; got ${tools.map((t) => t.name).join(", ")}`);
  return tool;
}

export async function execute(tools: Tool[], name: string, args: Record<string, unknown>, context = toolContext()): Promise<ToolResultValue> {
  return (await find(tools, name).execute(args, context)) as ToolResultValue;
}

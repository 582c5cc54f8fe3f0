/**
 * The checks of an agent's configuration beyond its model and tools: each bad field is a TypeError
 * naming it (`Agent config: …`), thrown when the agent is built.
 */
import { checkContextBudget } from "./context.js";
import { checkGuardrails } from "./guardrails.js";
import { type OutputContract, outputContract } from "./output.js";
import type { AgentConfig } from "./types.js";

/** Checks `config`; returns its output contract (`config.output`), if any. */
export function checkAgentConfig(config: AgentConfig<any>): OutputContract | undefined {
  for (const key of ["maxTurns", "maxToolRounds", "maxTokens", "maxToolCalls", "concurrency", "toolTimeoutMs", "maxDelegationDepth"] as const) {
    positiveInteger(config[key], key);
  }
  if (config.loopDetection) {
    positiveInteger(config.loopDetection.window, "loopDetection.window");
    positiveInteger(config.loopDetection.maxWarnings, "loopDetection.maxWarnings");
  }
  if (config.truncation) {
    positiveInteger(config.truncation.maxChars, "truncation.maxChars");
    positiveInteger(config.truncation.maxLines, "truncation.maxLines");
    const mode = config.truncation.mode;
    if (mode !== undefined && mode !== "head_tail" && mode !== "tail") {
      throw new TypeError(`Agent config: truncation.mode must be "head_tail" or "tail", got ${JSON.stringify(mode)}`);
    }
  }
  const modes = ["auto", "native", "string", "action", "plan", "fenced"];
  if (config.toolCallMode !== undefined && !modes.includes(config.toolCallMode)) {
    throw new TypeError(`Agent config: toolCallMode must be one of ${modes.join(", ")}, got ${JSON.stringify(config.toolCallMode)}`);
  }
  if (config.onLimit !== undefined && config.onLimit !== "stop" && config.onLimit !== "final-answer") {
    throw new TypeError(`Agent config: onLimit must be "stop" or "final-answer", got ${JSON.stringify(config.onLimit)}`);
  }
  checkContextBudget(config.context);
  const output = outputContract(config.output);
  checkGuardrails(config.guardrails);
  if (config.onApproval !== undefined && config.onApproval !== "wait" && config.onApproval !== "interrupt") {
    throw new TypeError(`Agent config: onApproval must be "wait" or "interrupt", got ${JSON.stringify(config.onApproval)}`);
  }
  positiveInteger(config.approvalTimeoutMs, "approvalTimeoutMs");
  if (config.needsApproval !== undefined && (!Array.isArray(config.needsApproval) || !config.needsApproval.every((name) => typeof name === "string" && name !== ""))) {
    throw new TypeError(`Agent config: needsApproval must be a list of tool names or globs, got ${JSON.stringify(config.needsApproval)}`);
  }
  return output;
}

function positiveInteger(value: unknown, name: string): void {
  if (value !== undefined && (typeof value !== "number" || !Number.isInteger(value) || value < 1)) {
    throw new TypeError(`Agent config: ${name} must be a positive integer, got ${JSON.stringify(value)}`);
  }
}

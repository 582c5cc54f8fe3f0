// The frontmatter's `guardrails` and `approvals`: the same declarative forms as an agent file.
//   guardrails: { deniedTools: [{ tools: "shell_*" | [names or globs], reason }] }
//   approvals:  { tools: [names or globs], mode: wait | interrupt, timeoutMs }
import { AgentLoopError } from "../errors.js";
import type { ToolDenyRule } from "../loop/guardrails.js";
import type { AgentConfig } from "../loop/types.js";
import type { PromptyAgent } from "./types.js";

function bad(agent: PromptyAgent, field: string, problem: string): AgentLoopError {
  return new AgentLoopError("configuration", `${agent.path ?? agent.name}: ${field} ${problem}`, { retryable: false });
}

function globs(agent: PromptyAgent, field: string, value: unknown): string[] {
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || !list.every((item) => typeof item === "string" && item !== "")) throw bad(agent, field, "must be a tool name or glob, or a list of them");
  return list;
}

/** The agent settings the frontmatter's `guardrails` and `approvals` add to `config`. */
export function controlOfFrontmatter(agent: PromptyAgent, config: Partial<AgentConfig> = {}): Partial<AgentConfig> {
  const { guardrails, approvals } = agent.frontmatter as { guardrails?: unknown; approvals?: unknown };
  const result: Partial<AgentConfig> = {};
  if (guardrails !== undefined) {
    const rules = (guardrails as { deniedTools?: unknown } | null)?.deniedTools ?? [];
    if (!Array.isArray(rules)) throw bad(agent, "guardrails.deniedTools", "must be a list of { tools, reason }");
    const deniedTools: ToolDenyRule[] = rules.map((rule, index) => {
      const entry = (rule ?? {}) as { tools?: unknown; reason?: unknown };
      if (typeof entry.reason !== "string" || entry.reason === "") throw bad(agent, `guardrails.deniedTools[${index}].reason`, "is required");
      return { tools: globs(agent, `guardrails.deniedTools[${index}].tools`, entry.tools), reason: entry.reason };
    });
    result.guardrails = { ...config.guardrails, deniedTools: [...(config.guardrails?.deniedTools ?? []), ...deniedTools] };
  }
  if (approvals !== undefined) {
    const { tools, mode, timeoutMs } = (approvals ?? {}) as { tools?: unknown; mode?: unknown; timeoutMs?: unknown };
    if (tools !== undefined) result.needsApproval = [...(config.needsApproval ?? []), ...globs(agent, "approvals.tools", tools)];
    if (mode !== undefined) {
      if (mode !== "wait" && mode !== "interrupt") throw bad(agent, "approvals.mode", `must be wait or interrupt, got ${JSON.stringify(mode)}`);
      result.onApproval = config.onApproval ?? mode;
    }
    if (timeoutMs !== undefined) {
      if (typeof timeoutMs !== "number" || !Number.isInteger(timeoutMs) || timeoutMs < 1) throw bad(agent, "approvals.timeoutMs", "must be a positive integer");
      result.approvalTimeoutMs = config.approvalTimeoutMs ?? timeoutMs;
    }
  }
  return result;
}

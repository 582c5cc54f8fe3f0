// createCodingAgent: a coding session's Agent, set up as the coding-agent spec describes: the
// profile's tools and prompt for the model family, the environment block and AGENTS.md in the
// system prompt, sub-agent tools, and approvals for the tools that change things.
import { Agent } from "../loop/agent.js";
import type { AgentConfig } from "../loop/types.js";
import type { Model } from "../model/model.js";
import type { Tool } from "../tools/tool.js";
import {
  CODING_PROFILES,
  type CodingProfile,
  codingSystemPrompt,
  type EnvironmentInfo,
  environmentInfo,
  type ProjectInstructions,
  profileForModel,
  projectInstructions,
} from "./session.js";
import { DEFAULT_SUBAGENT_DEPTH, SubagentManager } from "./subagents.js";
import { Workspace } from "./workspace.js";

/** The tools that change files or run commands: they ask first when approvals are on. */
export const WRITING_TOOLS: readonly string[] = ["shell", "write_file", "edit_file", "apply_patch"];

export interface CodingAgentOptions {
  model: Model;
  /** The model's `provider:model` spec or name: picks the profile and goes in the environment block. */
  modelName?: string;
  /** The workspace, or its root folder (default: the current folder). */
  workspace?: Workspace | string;
  /** `openai` (apply_patch), `anthropic` (edit_file) or a profile of your own; default from `modelName`. */
  profile?: string | CodingProfile;
  /** Tools added to the profile's; one with the name of a profile tool replaces it. */
  tools?: Tool[];
  /** Your instructions, appended last to the system prompt. */
  instructions?: string;
  /** Ask a person before these tools run: `true` for WRITING_TOOLS (shell, write_file, edit_file, apply_patch), or names/globs. Default: none. */
  approvals?: boolean | readonly string[];
  /** Model calls per input (default 100). */
  maxTurns?: number;
  /** Sub-agent tools (spawn_agent, send_input, wait, close_agent): `false` leaves them out. */
  subagents?: false | { maxDepth?: number; model?: Model };
  /** Budget of the project's instruction files, in bytes (default 32 KB). */
  instructionsBudget?: number;
  /** Other Agent settings (name, observers, memory, limits...). */
  agent?: Omit<AgentConfig, "model" | "tools" | "instructions">;
  /** The date of the environment block (default now). */
  now?: Date;
}

export interface CodingSession {
  agent: Agent;
  workspace: Workspace;
  profile: CodingProfile;
  systemPrompt: string;
  environment: EnvironmentInfo;
  project: ProjectInstructions;
  subagents?: SubagentManager;
  /** Stops the sub-agents still running. */
  close(): Promise<void>;
}

function resolveProfile(profile: string | CodingProfile | undefined, modelName: string | undefined): CodingProfile {
  if (profile === undefined) return profileForModel(modelName);
  if (typeof profile !== "string") return profile;
  const found = CODING_PROFILES[profile];
  if (!found) throw new TypeError(`createCodingAgent: unknown profile "${profile}"; use ${Object.keys(CODING_PROFILES).join(" or ")}, or pass a CodingProfile`);
  return found;
}

/** Profile tools, then extra ones: a later tool of the same name replaces an earlier one. */
function mergeTools(...lists: Tool[][]): Tool[] {
  const byName = new Map<string, Tool>();
  for (const list of lists) for (const tool of list) byName.set(tool.name, tool);
  return [...byName.values()];
}

/**
 * Sets up a coding session: reads the environment (git branch and status, platform, date) and the
 * project's AGENTS.md once, builds the system prompt and the Agent.
 */
export async function createCodingAgent(options: CodingAgentOptions): Promise<CodingSession> {
  if (!options || typeof options.model?.stream !== "function") throw new TypeError("createCodingAgent: model must be a Model");
  const workspace = options.workspace instanceof Workspace ? options.workspace : new Workspace({ root: options.workspace ?? process.cwd() });
  const profile = resolveProfile(options.profile, options.modelName);
  const environment = await environmentInfo(workspace, { model: options.modelName, now: options.now });
  const project = await projectInstructions(workspace, profile, { budget: options.instructionsBudget, gitRoot: environment.git?.root });
  const systemPrompt = codingSystemPrompt({ profile, environment, project, instructions: options.instructions });
  const needsApproval = options.approvals === true ? [...WRITING_TOOLS] : Array.isArray(options.approvals) ? [...options.approvals] : undefined;
  const maxTurns = options.maxTurns ?? 100;
  const extra = options.tools ?? [];

  let subagents: SubagentManager | undefined;
  if (options.subagents !== false) {
    const childModel = options.subagents?.model ?? options.model;
    subagents = new SubagentManager(
      workspace,
      ({ id, workspace: childWorkspace, depth, maxTurns: childTurns }) => {
        const childPrompt = codingSystemPrompt({
          profile,
          environment: { ...environment, workingDirectory: childWorkspace.root },
          project,
          instructions: `${options.instructions ? `${options.instructions}\n\n` : ""}You are ${id}, a sub-agent: another agent gave you this task. Do it, then answer with what you did and found; your answer is returned to that agent.`,
        });
        return new Agent({
          ...options.agent,
          name: id,
          model: childModel,
          instructions: childPrompt,
          tools: mergeTools(profile.tools(childWorkspace), subagents!.tools(depth), extra),
          maxTurns: childTurns,
          needsApproval,
        });
      },
      options.subagents?.maxDepth ?? DEFAULT_SUBAGENT_DEPTH,
    );
  }
  const agent = new Agent({
    name: "coder",
    ...options.agent,
    model: options.model,
    instructions: systemPrompt,
    tools: mergeTools(profile.tools(workspace), subagents?.tools(0) ?? [], extra),
    maxTurns,
    needsApproval: needsApproval ?? options.agent?.needsApproval,
  });
  return { agent, workspace, profile, systemPrompt, environment, project, subagents, close: async () => subagents?.closeAll() };
}

// agentloop/coding: the execution environment and tools of a coding agent. `glob` and `grep` load
// their glob library (tinyglobby) only when they run.
export {
  checkTimeout,
  childEnvironment,
  DEFAULT_EXEC_TIMEOUT_MS,
  type ExecOptions,
  type ExecResult,
  exec,
  KILL_GRACE_MS,
  MAX_CAPTURED_CHARS,
  looksLikeSecret,
  MAX_EXEC_TIMEOUT_MS,
  PIPE_DRAIN_MS,
} from "./exec.js";
export { applyHunks, applyPatch, lineDiff, MAX_DIFF_LINES, type PatchFileChange, type PatchHunk, type PatchOperation, PatchError, type PatchResult, parsePatch } from "./patch.js";
export {
  applyPatchTool,
  codingTools,
  DEFAULT_GREP_RESULTS,
  DEFAULT_READ_LIMIT,
  editFileTool,
  globTool,
  type GrepToolOptions,
  grepTool,
  numberLines,
  readFileTool,
  shellTool,
  writeFileTool,
} from "./tools.js";
export { PathOutsideWorkspaceError, Workspace, type WorkspaceOptions } from "./workspace.js";
export { type CodingAgentOptions, type CodingSession, createCodingAgent, WRITING_TOOLS } from "./agent.js";
export {
  ANTHROPIC_PROFILE,
  CODING_PROFILES,
  GEMINI_PROFILE,
  type CodingProfile,
  codingSystemPrompt,
  type EnvironmentInfo,
  environmentBlock,
  environmentInfo,
  type GitContext,
  gitContext,
  OPENAI_PROFILE,
  PROJECT_INSTRUCTIONS_BUDGET,
  type ProjectInstructions,
  profileForModel,
  projectInstructions,
} from "./session.js";
export { DEFAULT_SUBAGENT_DEPTH, DEFAULT_SUBAGENT_TURNS, type SubagentFactory, SubagentManager } from "./subagents.js";
export { type RipgrepOutcome, type RipgrepSearch, ripgrep, ripgrepAvailable } from "./ripgrep.js";

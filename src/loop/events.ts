/** The loop's events: declared in src/contracts/events.ts (below src/tools and src/loop), re-exported here. */
export type { LoopEvent, LoopEventType, ProgressBlock, RunResult, RunState, TerminalState, ToolErrorKind } from "../contracts/events.js";

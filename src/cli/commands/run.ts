import type { Command } from "commander";
import { AgentLoopError } from "../../errors.js";
import type { LoopEvent, RunResult, TerminalState } from "../../loop/events.js";
import type { Run } from "../../loop/run.js";
import { type AgentCliOptions, addAgentOptions, addModelOptions, type CliAgent, setupCliAgent } from "../agent-setup.js";
import { APPROVE_MODES, type ApproveMode, answerApproval, StdinQuestions } from "../approvals.js";
import { startTraceExport } from "../otel.js";
import { palette, RunRenderer } from "../render.js";

export interface RunCommandOptions extends AgentCliOptions {
  json?: boolean;
  input?: string[];
  /** Calls that need approval: approve `all`, reject them (`none`), or `ask` on the terminal (default). */
  approve?: ApproveMode;
}

/** Exit codes: a script can tell an answer from a limit from a failure. */
export const EXIT_CODES: Record<TerminalState, number> = {
  COMPLETED: 0,
  FAILED: 1,
  TURN_LIMIT: 3,
  ROUND_LIMIT: 3,
  TOKEN_BUDGET: 3,
  TOOL_BUDGET: 3,
  LOOP_DETECTED: 4,
  GUARDRAIL: 5,
  INTERRUPTED: 6,
  ABORTED: 130,
};

interface RunIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Where `--approve ask` reads answers (default `process.stdin`). */
  stdin?: NodeJS.ReadableStream;
}

function parseInputs(pairs: string[] = []): Record<string, string> {
  const inputs: Record<string, string> = {};
  for (const pair of pairs) {
    const index = pair.indexOf("=");
    if (index < 1) throw new AgentLoopError("configuration", `--input expects key=value, got "${pair}"`);
    inputs[pair.slice(0, index)] = pair.slice(index + 1);
  }
  return inputs;
}

/** `1 model call`, `2 model calls`. */
export function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** Why a run ended, in words, without repeating its state (an abort's reason starts with "aborted: "). */
export function endReason(result: RunResult): string {
  return result.state === "ABORTED" ? result.reason.replace(/^aborted: /, "") : result.reason;
}

/**
 * Shows a run as it happens (`--json`: one loop event per line), then its state; returns the exit
 * code. `signal` is the run's: when it aborts (Ctrl-C) at an approval question, the question is given up.
 */
export async function showRun(run: Run, options: { json?: boolean; approve?: ApproveMode; signal?: AbortSignal }, io: RunIO): Promise<number> {
  // Calls that need approval are answered as they come (`--approve`; `ask` reads stdin only then).
  const questions = new StdinQuestions(io.stdin ?? process.stdin, io.stderr);
  const renderer = options.json ? undefined : new RunRenderer(io.stdout);
  try {
    for await (const event of run) {
      if (renderer) renderer.onEvent(event);
      else io.stdout.write(`${JSON.stringify(event satisfies LoopEvent)}\n`);
      await answerApproval(run, event, options.approve ?? "ask", questions.ask, options.signal);
    }
  } finally {
    questions.close();
  }
  const result = await run;
  const colors = palette(io.stderr);
  if (result.state !== "COMPLETED") {
    io.stderr.write(colors.red(`agentloop: run ended ${result.state}: ${endReason(result)}\n`));
  } else if (!options.json) {
    const parts = [result.state, counted(result.turns, "model call"), counted(result.toolRounds, "wave"), counted(result.toolCalls, "tool call"), counted(result.usage.totalTokens, "token")];
    io.stderr.write(colors.dim(`${parts.join(" · ")}\n`));
  }
  return EXIT_CODES[result.state];
}

export async function runCommand(prompt: string, options: RunCommandOptions, io: RunIO = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const inputs = parseInputs(options.input);
  await startTraceExport(process.env, io.stderr); // OTLP trace export when OTEL_EXPORTER_OTLP_*ENDPOINT is set (flushed at exit)
  // The configured agent (agent file + KAOS variables + flags); an MCP server that cannot start fails here.
  const cli: CliAgent = await setupCliAgent(options, { requireMcp: true });
  for (const item of cli.runtime.unavailable) io.stderr.write(palette(io.stderr).yellow(`unavailable: ${item.kind} ${item.name} (${item.reason})\n`));
  const controller = new AbortController();
  const interrupt = () => controller.abort("interrupted (Ctrl-C)");
  process.once("SIGINT", interrupt);
  let release: (() => Promise<void>) | undefined;
  try {
    // Replicas sharing a PostgreSQL store take turns on a session: wait for it (Ctrl-C gives up).
    if (cli.memory && cli.sessionId) release = await cli.store?.lockSession?.(cli.sessionId, controller.signal);
    // The terminal answers approvals as they come (the agent file's `approvals.mode` is for servers).
    const run = cli.runtime.agent.run(prompt, { inputs, sessionId: cli.sessionId, signal: controller.signal, onApproval: "wait" });
    return await showRun(run, { ...options, signal: controller.signal }, io);
  } finally {
    process.off("SIGINT", interrupt);
    await release?.();
    await cli.close();
  }
}

export function registerRunCommand(program: Command): void {
  addModelOptions(addAgentOptions(program.command("run")))
    .description("Run the agent on one prompt: tool waves as they run, then the answer streamed")
    .argument("<prompt>", "what to ask")
    .option("--json", "print one JSON event per line on stdout")
    .option("-i, --input <key=value...>", "run inputs (bound tool parameters, templates)")
    .option("--approve <mode>", "tool calls that need approval: all (approve), none (reject) or ask (default: Allow <tool>(<args>)? [y/N] on the terminal)", (value) => {
      if (!(APPROVE_MODES as readonly string[]).includes(value)) throw new AgentLoopError("configuration", `--approve must be one of ${APPROVE_MODES.join(", ")}, got "${value}"`);
      return value as ApproveMode;
    })
    .addHelpText(
      "after",
      `
The agent comes from --agent FILE and the KAOS variables (MODEL_API_URL, MODEL_NAME, MCP_SERVERS,
TOOL_CALL_MODE, DEBUG_MOCK_RESPONSES...), flags on top. Examples:
  $ agentloop run "Plan my stay" --model openai:gpt-4.1 --max-steps 8
  $ agentloop run "Hi" --mock '["Hello! How can I help?"]'
  $ agentloop run "Echo hi" --mock @script.json --tool-call-mode action --mcp "npx -y @modelcontextprotocol/server-everything stdio"
  $ agentloop run "Hi" --json --mock '["Hello"]' | jq -c 'select(.type=="text-delta")'
  $ agentloop demo hotel                           # the hotel demo, no model needed

Tools that need approval (the agent file's approvals.tools) ask first: --approve all|none|ask.

Exit codes: 0 completed, 1 failed, 2 bad configuration, 3 limit reached, 4 loop detected, 5 stopped by a guardrail, 130 aborted.`,
    )
    .action(async (prompt: string, options: RunCommandOptions) => {
      process.exitCode = await runCommand(prompt, options);
    });
}

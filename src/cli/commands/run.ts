import type { Command } from "commander";
import { AgentLoopError } from "../../errors.js";
import type { Agent } from "../../loop/agent.js";
import type { LoopEvent, RunResult, TerminalState } from "../../loop/events.js";
import type { Model } from "../../model/model.js";
import { ScriptedModel } from "../../model/scripted.js";
import { type AgentCliOptions, addAgentOptions, type CliAgent, setupCliAgent, usesAgentOptions } from "../agent-setup.js";
import { startTraceExport } from "../otel.js";
import { palette, RunRenderer } from "../render.js";

export interface RunCommandOptions extends AgentCliOptions {
  model?: string;
  maxSteps?: number;
  json?: boolean;
  mock?: string;
  input?: string[];
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
  ABORTED: 130,
};

function parseInputs(pairs: string[] = []): Record<string, string> {
  const inputs: Record<string, string> = {};
  for (const pair of pairs) {
    const index = pair.indexOf("=");
    if (index < 1) throw new AgentLoopError("configuration", `--input expects key=value, got "${pair}"`);
    inputs[pair.slice(0, index)] = pair.slice(index + 1);
  }
  return inputs;
}

function today(): string {
  return new Date().toISOString().slice(0, 10);
}

/** The model to run on: --mock, --model, MODEL_API_URL/MODEL_NAME, or else the hotel demo's script. */
async function chooseModel(options: RunCommandOptions, env: NodeJS.ProcessEnv): Promise<{ model: Model; demo: boolean }> {
  if (options.mock !== undefined) return { model: new ScriptedModel(options.mock, { chunkDelayMs: 10 }), demo: false };
  if (options.model) {
    const { resolveModel } = await import("../../providers/index.js");
    return { model: await resolveModel(options.model, env), demo: false };
  }
  if (env.MODEL_API_URL || env.MODEL_NAME) {
    // The KAOS variables: an OpenAI-compatible server (its URL normalized, MODEL_API_KEY as its key).
    const { modelFromEnv } = await import("../../providers/index.js");
    return { model: await modelFromEnv({ env }), demo: false };
  }
  const { HOTEL_SCRIPT } = await import("../../../examples/hotel/agent.js");
  return { model: new ScriptedModel(HOTEL_SCRIPT, { chunkDelayMs: 15 }), demo: true };
}

export async function runCommand(prompt: string, options: RunCommandOptions, io = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  const env = process.env;
  await startTraceExport(env, io.stderr); // OTLP trace export when OTEL_EXPORTER_OTLP_*ENDPOINT is set (flushed at exit)
  // --agent/--session/--mcp: the configured agent (agent file + KAOS variables + flags), its session in memory.
  const cli: CliAgent | undefined = usesAgentOptions(options) ? await setupCliAgent(options) : undefined;
  const chosen = cli ? undefined : await chooseModel(options, env);
  // The hotel demo (and through it the loop) loads when a run needs it, not for --help.
  const { DEMO_TODAY, hotelAgent } = await import("../../../examples/hotel/agent.js");
  const inputs = { today: chosen?.demo || env.DEBUG_MOCK_RESPONSES ? DEMO_TODAY : today(), ...parseInputs(options.input) };
  const agent: Agent = cli ? cli.runtime.agent : hotelAgent({ model: chosen!.model, maxTurns: options.maxSteps ?? 5 });
  const controller = new AbortController();
  const interrupt = () => controller.abort("interrupted (Ctrl-C)");
  process.once("SIGINT", interrupt);
  let result: RunResult;
  let release: (() => Promise<void>) | undefined;
  try {
    // Replicas sharing a PostgreSQL store take turns on a session: wait for it (Ctrl-C gives up).
    if (cli?.memory && cli.sessionId) release = await cli.store?.lockSession?.(cli.sessionId, controller.signal);
    const run = agent.run(prompt, { inputs, sessionId: cli?.sessionId, signal: controller.signal });
    if (options.json) {
      for await (const event of run) io.stdout.write(`${JSON.stringify(event satisfies LoopEvent)}\n`);
    } else {
      const renderer = new RunRenderer(io.stdout);
      for await (const event of run) renderer.onEvent(event);
    }
    result = await run;
  } finally {
    process.off("SIGINT", interrupt);
    await release?.();
    await cli?.close();
  }
  const colors = palette(io.stderr);
  if (result.state !== "COMPLETED") {
    io.stderr.write(colors.red(`agentloop: run ended ${result.state}: ${result.reason}\n`));
  } else if (!options.json) {
    const usage = result.usage;
    io.stderr.write(
      colors.dim(`${result.state} · ${result.turns} model calls · ${result.toolRounds} waves · ${result.toolCalls} tool calls · ${usage.totalTokens} tokens\n`),
    );
  }
  return EXIT_CODES[result.state];
}

export function registerRunCommand(program: Command): void {
  addAgentOptions(program.command("run"))
    .description("Run the agent on one prompt: tool waves as they run, then the answer streamed")
    .argument("<prompt>", "what to ask")
    .option("-m, --model <spec>", "provider:model (openai:gpt-4.1, openai-responses:gpt-5, anthropic:claude-sonnet-4-5)")
    .option("--max-steps <n>", "model calls allowed for this input (default 5)", (value) => {
      const number = Number(value);
      if (!Number.isInteger(number) || number < 1) throw new AgentLoopError("configuration", `--max-steps must be a positive integer, got "${value}"`);
      return number;
    })
    .option("--json", "print one JSON event per line on stdout")
    .option("--mock <json>", "script the model: a JSON array of responses (DEBUG_MOCK_RESPONSES format)")
    .option("-i, --input <key=value...>", "run inputs (bound tool parameters, templates)")
    .addHelpText(
      "after",
      `
Without --model (and without MODEL_API_URL/MODEL_NAME) it runs the hotel demo on its scripted plan:
  $ agentloop run "I need availability for Hanukkah and also next weekend"
  $ agentloop run "Hi" --mock '["Hello! How can I help?"]'
  $ agentloop run "Plan my stay" --model openai:gpt-4.1 --max-steps 8
  $ agentloop run "Hi" --json | jq -c 'select(.type=="tool-end")'

Exit codes: 0 completed, 1 failed, 3 limit reached, 4 loop detected, 130 aborted.`,
    )
    .action(async (prompt: string, options: RunCommandOptions) => {
      process.exitCode = await runCommand(prompt, options);
    });
}

import { createInterface } from "node:readline";
import type { Command } from "commander";
// Types only: the coding modules and the providers load when the command runs.
import type { CodingSession } from "../../coding/index.js";
import { AgentLoopError } from "../../errors.js";
import type { LoopEvent, RunResult } from "../../loop/events.js";
import type { Run } from "../../loop/run.js";
import type { Message } from "../../messages.js";
import { checkMockScript } from "../../model/mock-script.js";
import type { Model } from "../../model/model.js";
import { NO_MODEL_MESSAGE, readMockOption, takeOverMockScript } from "../agent-setup.js";
import { APPROVE_MODES, type Ask, type ApproveMode, answerApproval, LineReader } from "../approvals.js";
import { CodingRenderer } from "../coding-render.js";
import { palette } from "../render.js";
import { counted, EXIT_CODES, endReason } from "./run.js";

export interface CodeCommandOptions {
  workspace?: string;
  model?: string;
  mock?: string;
  /** `ask` (default): the writing tools ask first; `all`: nothing asks; `none`: they are refused. */
  approve?: ApproveMode;
  profile?: string;
  maxTurns?: number;
  /** One loop event per line on stdout (as `agentloop run --json`) instead of the rendering. */
  json?: boolean;
}

interface CodeIO {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env?: NodeJS.ProcessEnv;
}

/** The model: `--mock` (one script for the whole session), `--model`, else the environment (MODEL_API_URL/MODEL_NAME, DEBUG_MOCK_RESPONSES). */
async function codingModel(options: CodeCommandOptions, env: NodeJS.ProcessEnv): Promise<{ model: Model; name: string }> {
  const { ScriptedModel } = await import("../../model/scripted.js");
  // The variable's script is read here, once, and taken out of the environment, so the Agents of the
  // session (sub-agents too) do not each replace their model with a fresh copy of it.
  const envScript = env.DEBUG_MOCK_RESPONSES;
  takeOverMockScript(env);
  const scripted = (script: string) => ({ model: new ScriptedModel(script, { chunkDelayMs: 5, continueAcrossRuns: true }), name: "scripted" });
  if (options.mock !== undefined) return scripted(await readMockOption(options.mock));
  if (options.model !== undefined) {
    const { resolveModel } = await import("../../providers/index.js");
    try {
      return { model: await resolveModel(options.model, env), name: options.model };
    } catch (error) {
      throw new AgentLoopError("configuration", `--model: ${(error as Error).message}`, { cause: error });
    }
  }
  if (envScript !== undefined && envScript !== "") {
    checkMockScript(envScript, "DEBUG_MOCK_RESPONSES");
    return scripted(envScript);
  }
  const [{ resolveAgentSettings }, { providerModelOfSettings }] = await Promise.all([import("../../config/settings.js"), import("../../config/build-agent.js")]);
  const settings = await resolveAgentSettings({ env });
  if (settings.model === undefined && settings.modelApiUrl === undefined && settings.modelName === undefined) throw new AgentLoopError("configuration", NO_MODEL_MESSAGE.replace("(the hotel demo: agentloop demo hotel)", "").trim());
  return { model: await providerModelOfSettings(settings, env), name: settings.model ?? settings.modelName ?? "model" };
}

/**
 * `agentloop code [prompt]`: a coding agent in a folder. With a prompt, one run (exit code as
 * `agentloop run`); without, an interactive session where each line is one input, with the history
 * kept. Each wave shows as it runs, edits with their diff, shell output as it streams.
 */
export async function codeCommand(prompt: string | undefined, options: CodeCommandOptions, io: CodeIO = process): Promise<number> {
  const env = io.env ?? process.env;
  const colors = palette(io.stderr);
  const approve = options.approve ?? "ask";
  const { model, name } = await codingModel(options, env);
  const { createCodingAgent, Workspace } = await import("../../coding/index.js");
  let workspace: InstanceType<typeof Workspace>;
  try {
    workspace = new Workspace({ root: options.workspace ?? process.cwd() });
  } catch (error) {
    throw new AgentLoopError("configuration", `--workspace: ${(error as Error).message}`);
  }
  let session: CodingSession;
  try {
    session = await createCodingAgent({ model, modelName: name, workspace, profile: options.profile, approvals: approve !== "all", maxTurns: options.maxTurns });
  } catch (error) {
    throw new AgentLoopError("configuration", (error as Error).message);
  }
  const git = session.environment.git;
  io.stderr.write(
    colors.dim(
      `agentloop code · ${workspace.root}${git ? ` (${git.branch}, ${git.status})` : ""} · ${name} · ${session.profile.id} tools · approvals: ${approve === "all" ? "off" : approve}` +
        (session.project.files.length > 0 ? ` · ${session.project.files.join(", ")}` : "") +
        "\n",
    ),
  );
  for (const cut of session.project.cut) io.stderr.write(colors.yellow(`project instructions cut to 32 KB: ${cut}\n`));

  const interactive = prompt === undefined;
  const terminal = io.stdin.isTTY === true && io.stdout.isTTY === true;
  const lines = createInterface({ input: io.stdin, output: terminal ? io.stdout : undefined, terminal });
  // A question that Ctrl-C gives up (the input is aborted) leaves the next line to the prompt.
  const reader = new LineReader(lines[Symbol.asyncIterator]());
  // With --json, stdout holds only the events: the questions go to stderr.
  const questions = options.json ? io.stderr : io.stdout;
  const ask: Ask = async (question, signal) => {
    questions.write(colors.yellow(question));
    const answer = await reader.read(signal);
    // A terminal echoes the answer; piped input does not, so the transcript shows it.
    if (!terminal || answer === null) questions.write(typeof answer === "string" ? `${answer}\n` : "\n");
    return answer;
  };
  let current: AbortController | undefined;
  const interrupt = () => {
    if (current && !current.signal.aborted) current.abort("interrupted (Ctrl-C)");
    else lines.close();
  };
  lines.on("SIGINT", interrupt);
  process.on("SIGINT", interrupt);

  let history: Message[] = [];
  const runOnce = async (input: string): Promise<RunResult> => {
    current = new AbortController();
    const { signal } = current;
    const run: Run = session.agent.run(input, { history, signal, onApproval: "wait" });
    const renderer = options.json ? undefined : new CodingRenderer(io.stdout);
    for await (const event of run) {
      if (renderer) renderer.onEvent(event);
      else io.stdout.write(`${JSON.stringify(event satisfies LoopEvent)}\n`);
      await answerApproval(run, event, approve, ask, signal);
    }
    const result = await run;
    current = undefined;
    history = result.messages.filter((message) => message.role !== "system");
    const parts = [result.state, counted(result.turns, "model call"), counted(result.toolRounds, "wave"), counted(result.toolCalls, "tool call")];
    if (result.state === "COMPLETED") io.stderr.write(colors.dim(`${parts.join(" · ")}\n`));
    else if (result.state === "ABORTED") io.stderr.write(colors.yellow(`⏹ aborted: ${endReason(result)}\n`)); // as chat says it
    else io.stderr.write(colors.red(`■ ${result.state}: ${endReason(result)}\n`));
    return result;
  };

  try {
    if (!interactive) return EXIT_CODES[(await runOnce(prompt)).state];
    lines.setPrompt(colors.cyan("code› "));
    if (terminal) lines.prompt();
    for (let next = await reader.next(); !next.done; next = await reader.next()) {
      const input = next.value.trim();
      if (input === "/exit" || input === "/quit") break;
      if (input !== "") await runOnce(input);
      if (terminal) lines.prompt();
    }
    return 0;
  } finally {
    process.off("SIGINT", interrupt);
    lines.close();
    await session.close();
  }
}

export function registerCodeCommand(program: Command): void {
  program
    .command("code")
    .description("A coding agent in this folder: reads, edits (with diffs), runs commands; interactive, or one-shot with a prompt")
    .argument("[prompt]", "the task (without it: an interactive session, one input a line, /exit to leave)")
    .option("-w, --workspace <dir>", "the folder the agent works in (default: the current one); files outside it are refused")
    .option("-m, --model <spec>", "provider:model (openai:gpt-4.1 gets apply_patch, anthropic:claude-sonnet-4-5 edit_file); else MODEL_API_URL/MODEL_NAME")
    .option("--mock <json>", "script the model: a JSON array of responses, or @file.json (one script for the whole session)")
    .option("--json", "print one JSON loop event per line on stdout (as agentloop run --json) instead of the rendering")
    .option("--profile <name>", "tool set and prompt: openai (apply_patch) or anthropic (edit_file); default from the model")
    .option("--max-turns <n>", "model calls per input (default 100)", (value) => {
      if (!/^\d+$/.test(value) || Number(value) < 1) throw new AgentLoopError("configuration", `--max-turns must be a positive integer, got "${value}"`);
      return Number(value);
    })
    .option("--approve <mode>", "shell, write_file, edit_file, apply_patch: ask first (default), all (never ask), none (refuse them)", (value) => {
      if (!(APPROVE_MODES as readonly string[]).includes(value)) throw new AgentLoopError("configuration", `--approve must be one of ${APPROVE_MODES.join(", ")}, got "${value}"`);
      return value as ApproveMode;
    })
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop code                                   # interactive, in the current folder
  $ agentloop code "Fix the failing test" --model anthropic:claude-sonnet-4-5
  $ agentloop code "Add a --verbose flag" --workspace ../app --model openai:gpt-4.1 --approve all
  $ agentloop code "Fix add()" --mock @script.json   # a scripted session, no model needed
  $ agentloop code "Fix add()" --approve all --json | jq -c 'select(.type=="tool-end") | [.name, .output]'

The system prompt holds the folder, platform, date, git branch and status, and the project's
AGENTS.md (32 KB at most). read_file, glob and grep never ask; shell, write_file, edit_file and
apply_patch ask "Allow <tool>(<args>)? [y/N]" unless --approve all.`,
    )
    .action(async (prompt: string | undefined, options: CodeCommandOptions) => {
      process.exitCode = await codeCommand(prompt, options);
    });
}

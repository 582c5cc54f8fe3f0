import { createInterface } from "node:readline";
import type { Command } from "commander";
import type { LoopEvent, RunResult } from "../../loop/events.js";
import type { McpElicitationHandler } from "../../mcp/index.js";
import { type AgentCliOptions, addAgentOptions, addModelOptions, setupCliAgent } from "../agent-setup.js";
import { type Ask, answerApproval, LineReader } from "../approvals.js";
import { startTraceExport } from "../otel.js";
import { askInline } from "../elicitation.js";
import { palette, RunRenderer } from "../render.js";
import { ToolSpinner } from "../spinner.js";
import { EXIT_CODES, endReason } from "./run.js";

export interface ChatCommandOptions extends AgentCliOptions {
  json?: boolean;
}

interface ChatIO {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** The environment the agent is configured from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/**
 * `agentloop chat`: an interactive session. Each line is one run in the same session; tool
 * waves show as they run, the answer streams. Ctrl-C aborts the current run (at an approval
 * question too) and keeps the chat; a second Ctrl-C with no line typed since, `/exit` or the end
 * of input leaves. With piped input, the exit code is the last run's (as `agentloop run`'s).
 */
export async function chatCommand(options: ChatCommandOptions, io: ChatIO = process): Promise<number> {
  const colors = palette(io.stderr);
  await startTraceExport(io.env ?? process.env, io.stderr); // OTLP trace export when OTEL_EXPORTER_OTLP_*ENDPOINT is set (flushed at exit)
  // A script runs across the whole conversation: the second message gets the entries after the first's.
  // An MCP server's question (elicitation) is asked inline, reading the answers from the chat's input.
  let askUser: McpElicitationHandler | undefined;
  const elicitation: McpElicitationHandler = (request, context) => (askUser ? askUser(request, context) : Promise.resolve({ action: "decline" }));
  const cli = await setupCliAgent(options, { alwaysSession: true, sessionPrefix: "chat", env: io.env, continueScript: true, elicitation });
  const { runtime, sessionId } = cli;
  const interactive = io.stdin.isTTY === true && io.stdout.isTTY === true;
  io.stderr.write(
    `${colors.bold(runtime.settings.name)} ${colors.dim(`· session ${sessionId} · /exit to leave · Ctrl-C aborts a run`)}\n` +
      (runtime.unavailable.length > 0 ? colors.yellow(`unavailable: ${runtime.unavailable.map((item) => `${item.kind} ${item.name} (${item.reason})`).join(", ")}\n`) : ""),
  );
  const lines = createInterface({ input: io.stdin, output: interactive ? io.stdout : undefined, terminal: interactive });
  let current: AbortController | undefined;
  // As node's REPL: a Ctrl-C with no line typed since the previous one leaves (the previous one may
  // have aborted a run, or been pressed at the prompt).
  let armed = false;
  const interrupt = () => {
    if (current && !current.signal.aborted) {
      current.abort("interrupted (Ctrl-C)");
      armed = true;
      return;
    }
    if (armed) {
      lines.close();
      return;
    }
    armed = true;
    io.stderr.write(colors.dim("\n(press Ctrl-C again or type /exit to leave)\n"));
    if (interactive) lines.prompt();
  };
  // On a terminal readline sees Ctrl-C; with piped input the process gets SIGINT.
  lines.on("SIGINT", interrupt);
  process.on("SIGINT", interrupt);
  lines.setPrompt(colors.cyan("› "));
  // One reader for both the messages and the answers to questions asked mid-run. A question that
  // Ctrl-C gives up (the run is aborted) leaves the next line to the chat.
  const reader = new LineReader(lines[Symbol.asyncIterator]());
  const ask: Ask = async (question, signal) => {
    const out = options.json ? io.stderr : io.stdout;
    out.write(colors.yellow(question));
    const answer = await reader.read(signal);
    if (answer === null) out.write("\n");
    return answer;
  };
  askUser = (request) => askInline(request, reader, io.stderr, colors);

  /** One message: takes the session (a server replica on a shared store may be using it), runs, renders. */
  const runTurn = async (input: string, signal: AbortSignal): Promise<RunResult | undefined> => {
    let release: (() => Promise<void>) | undefined;
    try {
      release = cli.memory ? await cli.store?.lockSession?.(sessionId!, signal) : undefined;
    } catch (error) {
      io.stderr.write(colors.yellow(`⏹ ${(error as Error).message}\n`));
      return undefined;
    }
    try {
      // Calls that need approval are asked about inline: Allow <tool>(<args>)? [y/N]
      const run = runtime.agent.run(input, { sessionId, signal, onApproval: "wait" });
      if (options.json) {
        for await (const event of run) {
          io.stdout.write(`${JSON.stringify(event satisfies LoopEvent)}\n`);
          await answerApproval(run, event, "ask", ask, signal);
        }
      } else {
        const spinner = io.stdout.isTTY ? new ToolSpinner(io.stdout, palette(io.stdout)) : undefined;
        const renderer = new RunRenderer(spinner ?? io.stdout, { colors: palette(io.stdout) });
        try {
          for await (const event of run) {
            // The spinner learns of a tool first, so the renderer's line about it is drawn above it.
            spinner?.onEvent(event);
            renderer.onEvent(event);
            await answerApproval(run, event, "ask", ask, signal);
          }
        } finally {
          spinner?.stop();
        }
      }
      return await run;
    } finally {
      await release?.();
    }
  };
  // The last run's end: with piped input, a script learns of its failure from the exit code.
  let last: RunResult | undefined;
  try {
    if (interactive) lines.prompt();
    for (let next = await reader.next(); !next.done; next = await reader.next()) {
      armed = false;
      const input = next.value.trim();
      if (input === "/exit" || input === "/quit") break;
      if (input === "") {
        if (interactive) lines.prompt();
        continue;
      }
      if (input === "/session") {
        io.stdout.write(`${sessionId}\n`);
        if (interactive) lines.prompt();
        continue;
      }
      current = new AbortController();
      const result = await runTurn(input, current.signal);
      current = undefined;
      if (result === undefined) {
        if (interactive) lines.prompt();
        continue;
      }
      last = result;
      if (result.state === "ABORTED") io.stderr.write(colors.yellow(`⏹ aborted: ${endReason(result)}\n`));
      else if (result.state === "FAILED") io.stderr.write(colors.red(`✗ failed: ${result.error?.message ?? result.reason}\n`));
      else if (result.state !== "COMPLETED") io.stderr.write(colors.yellow(`■ ${result.state}: ${result.reason}\n`));
      if (interactive) lines.prompt();
    }
  } finally {
    process.off("SIGINT", interrupt);
    lines.close();
    await cli.close();
  }
  io.stderr.write(colors.dim(`bye · continue later with: agentloop chat --session ${sessionId}${options.agent ? ` --agent ${options.agent}` : ""}\n`));
  // On a terminal the person saw how each run ended; piped input (a script) gets the last run's
  // exit code, as `agentloop run` gives it (an aborted run was the user's choice: 0).
  if (io.stdin.isTTY !== true && last && last.state !== "ABORTED") return EXIT_CODES[last.state];
  return 0;
}

export function registerChatCommand(program: Command): void {
  const command = program
    .command("chat")
    .description("Chat with an agent in the terminal: streaming answers, tool waves as they run, sessions that last");
  addModelOptions(addAgentOptions(command))
    .option("--json", "print one JSON loop event per line on stdout instead of the rendered chat")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop chat --agent agent.yaml
  $ agentloop chat --model openai:gpt-4.1 --mcp "npx -y @modelcontextprotocol/server-filesystem ."
  $ agentloop chat --session chat_1a2b3c4d          # continue an earlier chat
  $ printf 'hi\\n/exit\\n' | agentloop chat --mock '["Hello!"]'
  $ agentloop chat --mock @chat-script.json --tool-call-mode action   # one script for the whole chat

In the chat: /exit leaves, /session prints the session id, Ctrl-C aborts the running answer.
Sessions are stored where MEMORY_TYPE / the agent file's memory section say (default: the embedded
store .agentloop/<agent name>/memory.db in this folder, or MEMORY_PATH), the same store
\`agentloop serve\`, \`sessions\` and \`events\` use.`,
    )
    .action(async (options: ChatCommandOptions) => {
      process.exitCode = await chatCommand(options);
    });
}

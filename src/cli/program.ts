import { Command, CommanderError } from "commander";
import { AgentLoopError } from "../errors.js";
import { registerChatCommand } from "./commands/chat.js";
import { registerCodeCommand } from "./commands/code.js";
import { registerDemoCommand } from "./commands/demo.js";
import { registerRunCommand } from "./commands/run.js";
import { registerRunsCommand } from "./commands/runs.js";
import { registerServeCommand, registerStudioCommand } from "./commands/serve.js";
import { registerEventsCommand, registerSessionsCommand } from "./commands/sessions.js";

export interface CliOutput {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** The `agentloop` command line: every command registered, its help and errors written to `io`. */
export function createProgram(io: CliOutput = process): Command {
  const program = new Command()
    .name("agentloop")
    .description("Run LLM agents: the agentic loop with tools, waves, limits and streaming")
    .version("0.1.0")
    .exitOverride()
    // Set before the commands are added, so they inherit it. A usage error is one line naming the
    // problem (`agentloop: missing required argument 'prompt'`), then one pointing to --help.
    .configureOutput({
      writeOut: (text) => void io.stdout.write(text),
      writeErr: (text) => void io.stderr.write(text),
      outputError: (text, write) => write(text.replace(/^error: /, "agentloop: ")),
    });
  registerRunCommand(program);
  registerChatCommand(program);
  registerCodeCommand(program);
  registerServeCommand(program);
  registerStudioCommand(program);
  registerSessionsCommand(program);
  registerEventsCommand(program);
  registerRunsCommand(program);
  registerDemoCommand(program);
  pointToHelp(program);
  return program;
}

/** After a usage error, each command names its own help: `Run "agentloop demo hotel --help" for usage.` */
function pointToHelp(command: Command, path: string[] = []): void {
  const names = command.parent ? [...path, command.name()] : [command.name()];
  command.showHelpAfterError(`Run "${names.join(" ")} --help" for usage.`);
  for (const sub of command.commands) pointToHelp(sub, names);
}

/** Commander's codes that are not usage errors: help and the version, asked for. */
const NOT_USAGE_ERRORS = new Set(["commander.helpDisplayed", "commander.help", "commander.version"]);

/**
 * Runs the command line on `argv` (without node and the script). Returns the exit code for usage
 * errors (2), help and failures before a command ran; undefined when a command ran (it sets
 * `process.exitCode` itself).
 */
export async function runCli(argv: string[], io: CliOutput = process): Promise<number | undefined> {
  try {
    await createProgram(io).parseAsync(argv, { from: "user" });
    return undefined;
  } catch (error) {
    if (error instanceof CommanderError) return NOT_USAGE_ERRORS.has(error.code) ? error.exitCode : 2;
    const message = AgentLoopError.isInstance(error) ? error.message : error instanceof Error ? error.message : String(error);
    io.stderr.write(`agentloop: ${message}\n`);
    return 2;
  }
}

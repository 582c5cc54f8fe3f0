#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { AgentLoopError } from "../errors.js";
import { registerChatCommand } from "./commands/chat.js";
import { registerRunCommand } from "./commands/run.js";
import { registerServeCommand } from "./commands/serve.js";
import { registerEventsCommand, registerSessionsCommand } from "./commands/sessions.js";

const program = new Command()
  .name("agentloop")
  .description("Run LLM agents: the agentic loop with tools, waves, limits and streaming")
  .version("0.1.0")
  .showHelpAfterError()
  .exitOverride();

registerRunCommand(program);
registerChatCommand(program);
registerServeCommand(program);
registerSessionsCommand(program);
registerEventsCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode;
  } else {
    const message = AgentLoopError.isInstance(error) ? `${error.message}` : error instanceof Error ? error.message : String(error);
    process.stderr.write(`agentloop: ${message}\n`);
    process.exitCode = 2;
  }
}

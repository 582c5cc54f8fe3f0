#!/usr/bin/env node
import { runCli } from "./program.js";

// A reader that went away (`agentloop run --json | head -1`): stop quietly, as `git log | head`
// does, instead of an unhandled `write EPIPE`. Exit 0: what was asked for was read.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
}

const code = await runCli(process.argv.slice(2));
if (code !== undefined) process.exitCode = code;

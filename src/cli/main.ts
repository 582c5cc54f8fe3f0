#!/usr/bin/env node
import { runCli } from "./program.js";

const code = await runCli(process.argv.slice(2));
if (code !== undefined) process.exitCode = code;

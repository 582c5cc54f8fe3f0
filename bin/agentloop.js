#!/usr/bin/env node
// The `agentloop` command: the CLI that `npm run build` compiles into dist/ (in the npm package,
// `prepack` did). This file exists before any build, so `npm install` in a clone links it into
// node_modules/.bin (the clone depends on itself as a development dependency) and `npx agentloop`
// runs the clone's CLI once it is built.
import { existsSync } from "node:fs";

const main = new URL("../dist/src/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("agentloop: the CLI is not built yet: run `npm run build` (or `npm run demo`) in this clone first\n");
  process.exit(2);
}
await import(main.href);

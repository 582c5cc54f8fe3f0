// Child processes that run a TypeScript file (a test's child script, an example, a docs snippet).
// Through tsx, every child pays ~1 s of CPU to load the loader and compile the sources it imports;
// on the 2-core CI machine that was a large share of the suite. So a test bundles the entry once
// with esbuild (npm packages stay external, code splitting keeps lazy imports lazy, as in the
// compiled package) and starts the children as plain node. If esbuild fails, the children run
// through tsx as before.
import { mkdirSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBundleOptions } from "../scripts/esbuild-node.mjs";

const root = fileURLToPath(new URL("../", import.meta.url));
const tsxLoader = import.meta.resolve("tsx");
// Inside the repository, so the bundles' imports of npm packages resolve from its node_modules.
const cache = join(root, "node_modules/.cache/agentloop-test", `children-${process.pid}`);
const bundles = new Map<string, Promise<string[]>>();
let cleanupRegistered = false;

/** The node arguments that run the TypeScript file `entry` (an absolute path): `[bundle.mjs]`, or `["--import", tsx, entry]`. */
export function tsChild(entry: string): Promise<string[]> {
  let args = bundles.get(entry);
  if (!args) {
    args = bundle(entry);
    bundles.set(entry, args);
  }
  return args;
}

async function bundle(entry: string): Promise<string[]> {
  if (!cleanupRegistered) {
    cleanupRegistered = true;
    process.once("exit", () => rmSync(cache, { recursive: true, force: true }));
  }
  const outdir = join(cache, String(bundles.size));
  try {
    const { build } = await import("esbuild");
    mkdirSync(outdir, { recursive: true });
    await build({ ...nodeBundleOptions, entryPoints: [entry], outdir, tsconfig: join(root, "tsconfig.json") });
    return [join(outdir, `${basename(entry).replace(/\.[cm]?tsx?$/, "")}.mjs`)];
  } catch {
    return ["--import", tsxLoader, entry];
  }
}

// Child processes that run a TypeScript file (a test's child script, an example, a docs snippet).
// Through tsx, every child pays ~1 s of CPU to load the loader and compile the sources it imports;
// on the 2-core CI machine that was a large share of the suite. So a test bundles the entry once
// with esbuild (npm packages stay external, code splitting keeps lazy imports lazy, as in the
// compiled package) and starts the children as plain node. If esbuild fails, the children run
// through tsx as before.
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Plugin } from "esbuild";
import { nodeBundleOptions } from "../scripts/esbuild-node.mjs";

const root = fileURLToPath(new URL("../", import.meta.url));
const tsxLoader = import.meta.resolve("tsx");
// Inside the repository, so the bundles' imports of npm packages resolve from its node_modules.
const cache = join(root, "node_modules/.cache/agentloop-test", `children-${process.pid}`);
const bundles = new Map<string, Promise<string[]>>();
let cleanupRegistered = false;

/**
 * `agentloop` and `agentloop/<sub>` (an example's imports) from this repository's sources, as
 * tsconfig's `paths` say. Resolved here, not by esbuild's `paths`: with `packages: "external"` a
 * path that lies below a node_modules folder is left external, and the mutation sandbox (where
 * these children run too) is one (node_modules/.cache/agentloop-mutation/sandboxes).
 */
const ownSources: Plugin = {
  name: "agentloop-sources",
  setup(build) {
    build.onResolve({ filter: /^agentloop(\/[a-z-]+)?$/ }, (args) => {
      const path = join(root, args.path === "agentloop" ? "src/index.ts" : `src/${args.path.slice("agentloop/".length)}/index.ts`);
      return existsSync(path) ? { path } : undefined;
    });
  },
};

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
    await build({ ...nodeBundleOptions, plugins: [...(nodeBundleOptions.plugins ?? []), ownSources], entryPoints: [entry], outdir, tsconfig: join(root, "tsconfig.json") });
    return [join(outdir, `${basename(entry).replace(/\.[cm]?tsx?$/, "")}.mjs`)];
  } catch {
    return ["--import", tsxLoader, entry];
  }
}

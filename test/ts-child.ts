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

/**
 * The node arguments of each of `entries`, as {@link tsChild}'s, from one esbuild build: many small
 * entries (a doc's examples) share its reading of the sources, each of which a build of its own repeats.
 */
export function tsChildren(entries: string[]): Promise<string[][]> {
  const fresh = entries.filter((entry, index) => !bundles.has(entry) && entries.indexOf(entry) === index);
  if (fresh.length > 0) {
    const built = bundleAll(fresh);
    for (const [index, entry] of fresh.entries()) bundles.set(entry, built.then((all) => all[index]!));
  }
  return Promise.all(entries.map((entry) => tsChild(entry)));
}

function bundle(entry: string): Promise<string[]> {
  return bundleAll([entry]).then((all) => all[0]!);
}

let builds = 0;
async function bundleAll(entries: string[]): Promise<string[][]> {
  if (!cleanupRegistered) {
    cleanupRegistered = true;
    process.once("exit", () => rmSync(cache, { recursive: true, force: true }));
  }
  const outdir = join(cache, String(builds++));
  // An entry's output is named after it; numbered when several are built (two may share a name).
  const outOf = (entry: string, index: number) => `${entries.length > 1 ? `${index}-` : ""}${basename(entry).replace(/\.[cm]?tsx?$/, "")}`;
  try {
    const { build } = await import("esbuild");
    mkdirSync(outdir, { recursive: true });
    await build({
      ...nodeBundleOptions,
      plugins: [...(nodeBundleOptions.plugins ?? []), ownSources],
      entryPoints: entries.map((entry, index) => ({ in: entry, out: outOf(entry, index) })),
      outdir,
      tsconfig: join(root, "tsconfig.json"),
    });
    return entries.map((entry, index) => [join(outdir, `${outOf(entry, index)}.mjs`)]);
  } catch {
    return entries.map((entry) => ["--import", tsxLoader, entry]);
  }
}

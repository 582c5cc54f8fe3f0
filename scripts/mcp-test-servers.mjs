// The MCP servers the tests start as child processes (the reference "everything" and "filesystem"
// servers, the fixture servers of test/mcp/fixtures), each bundled with esbuild into one file with
// its npm packages inside, once per test run (scripts/run-tests.mjs; AGENTLOOP_TEST_MCP_SERVERS
// names the folder, and test/mcp/helpers.ts's `mcpTestServer` picks a server's bundle from it).
//
// Why: loaded from node_modules, a server spends ~0.6 s of CPU on Node 20 resolving and compiling
// the MCP SDK's and zod's many modules before it answers; bundled, ~0.3 s. The suite starts these
// servers dozens of times (a test that kills a server starts it again), so the build (~1 s of
// CPU, once) pays for itself many times over. The code that runs is the packages' own, unchanged:
// only how it is loaded differs. Each module's `import.meta.url` keeps naming its source file (the
// everything server finds its docs/ folder next to its sources), and a `require` of what stays
// outside the bundle resolves from the repository's node_modules, as before.
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { requireBanner, withSourceImportMeta } from "./esbuild-node.mjs";

/** The servers, by the name their bundle gets (`<name>.mjs`), and their source entries (relative to the repository). */
export const mcpTestServers = {
  everything: "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
  filesystem: "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
  "dynamic-server": "test/mcp/fixtures/dynamic-server.mjs",
  "elicit-server": "test/mcp/fixtures/elicit-server.mjs",
  "resumable-server": "test/mcp/fixtures/resumable-server.mjs",
};

/** Bundles every server of {@link mcpTestServers} into `outdir` (below the repository, so what stays external resolves). */
export async function buildMcpTestServers(outdir, root = resolve(".")) {
  const { build } = await import("esbuild");
  await build({
    entryPoints: Object.entries(mcpTestServers).map(([name, entry]) => ({ in: join(root, entry), out: name })),
    outdir,
    bundle: true,
    // One chunk of the SDK and zod shared by the servers: read once from disk, not five times.
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outExtension: { ".js": ".mjs" },
    logLevel: "silent",
    // CommonJS packages inside (express, for the everything server's HTTP mode) call require.
    banner: requireBanner,
    plugins: [
      {
        name: "source-import-meta",
        setup(build) {
          build.onLoad({ filter: /\.m?js$/ }, (args) => {
            const contents = readFileSync(args.path, "utf8");
            if (!contents.includes("import.meta.")) return undefined;
            return { contents: withSourceImportMeta(contents, args.path), loader: "js" };
          });
        },
      },
    ],
  });
}

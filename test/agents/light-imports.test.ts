// Each subpath export loads only the packages it needs: importing `agentloop/agents` must not load
// the A2A SDK, `agentloop/text-tools` no validator, the core nothing at all... Checked in real child
// processes that record every module they load.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { tsChild } from "../ts-child.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const hooks = fileURLToPath(new URL("./fixtures/record-loads.mjs", import.meta.url));
const folder = mkdtempSync(join(tmpdir(), "agentloop-imports-"));
after(() => rmSync(folder, { recursive: true, force: true }));

/** The TypeScript loader's own packages (a child through tsx), and where the test's bundles live (node_modules/.cache). */
const loaderPackages = new Set(["tsx", "esbuild", "@esbuild", "get-tsconfig", "resolve-pkg-maps", ".cache"]);

/** The npm packages a child loads when it imports `module` (a path below the repository). */
async function packagesLoadedBy(module: string): Promise<string[]> {
  const child = await tsChild(join(root, module));
  const log = join(folder, `${module.replaceAll("/", "_")}.log`);
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", hooks, ...child],
      { cwd: root, env: { ...process.env, AGENTLOOP_LOAD_LOG: log }, timeout: 30_000 },
      (error, _stdout, stderr) => (error ? reject(new Error(`importing ${module} failed: ${stderr}`)) : resolve()),
    );
  });
  const packages = new Set<string>();
  for (const url of readFileSync(log, "utf8").split("\n")) {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (match && !loaderPackages.has(match[1].split("/")[0]) && !loaderPackages.has(match[1])) packages.add(match[1]);
  }
  return [...packages].sort();
}

describe("subpath imports stay light", () => {
  const expected: Record<string, string[]> = {
    "src/index.ts": [],
    "src/agents/index.ts": [],
    "src/text-tools/index.ts": [],
    "src/coding/index.ts": [],
    "src/ui/index.ts": [],
    "src/memory/index.ts": [],
    "src/tracing/index.ts": ["@opentelemetry/api"],
    "src/prompty/index.ts": ["nunjucks", "yaml"],
    // The A2A SDK (and its JWT library) loads with the first A2A request, not with the server.
    // OpenTelemetry's API loads once something is registered with it (src/memory/session-memory.ts).
    "src/server/index.ts": ["@hono/node-server", "hono"],
  };
  for (const [module, packages] of Object.entries(expected)) {
    it(`${module} loads ${packages.length ? packages.join(", ") : "no npm package"}`, async () => {
      assert.deepEqual(await packagesLoadedBy(module), packages);
    });
  }

  it("src/mcp and src/a2a load their own SDK and not each other's", async () => {
    const [mcp, a2a] = await Promise.all([packagesLoadedBy("src/mcp/index.ts"), packagesLoadedBy("src/a2a/index.ts")]);
    assert.ok(mcp.includes("@modelcontextprotocol/sdk"), mcp.join(", "));
    assert.ok(!mcp.includes("@a2a-js/sdk") && !mcp.includes("@opentelemetry/api"), mcp.join(", "));
    assert.ok(a2a.includes("@a2a-js/sdk"), a2a.join(", "));
    assert.ok(!a2a.includes("@modelcontextprotocol/sdk") && !a2a.includes("@opentelemetry/api"), a2a.join(", "));
  });
});

/** The repository-relative files every module in `folder` imports (static, `export … from` and `import()`, type-only included). */
function importsOf(folder: string): Array<{ from: string; to: string }> {
  const edges: Array<{ from: string; to: string }> = [];
  for (const name of readdirSync(join(root, folder), { recursive: true, encoding: "utf8" })) {
    if (!name.endsWith(".ts")) continue;
    const file = join(root, folder, name);
    const source = readFileSync(file, "utf8");
    for (const match of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm)) {
      edges.push({ from: relative(root, file), to: relative(root, resolve(dirname(file), match[1])) });
    }
  }
  return edges;
}

describe("layers import downward", () => {
  it("nothing under src/tools imports src/loop (the loop's shapes tools name live in src/contracts)", () => {
    const edges = importsOf("src/tools");
    assert.ok(edges.some((edge) => edge.to.startsWith("src/contracts/")), "src/tools names the contracts");
    assert.deepEqual(
      edges.filter((edge) => edge.to.startsWith("src/loop/")),
      [],
    );
  });

  it("src/contracts imports neither src/tools nor src/loop", () => {
    assert.deepEqual(
      importsOf("src/contracts").filter((edge) => /^src\/(tools|loop)\//.test(edge.to)),
      [],
    );
  });
});

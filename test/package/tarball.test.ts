// The package as a user gets it: `npm pack` (its `prepack` builds dist) on a copy of the sources, the
// tarball installed with npm into an empty app in a temp folder, then what the README promises there.
// One pack and one install for every check (they are the slow part: a tsc build and an npm install).
// On Node 22 and newer the app also installs `openai` 7 (Node 22+) for its own use, beside agentloop's.
import assert from "node:assert/strict";
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { cleanEnv, readyUrl, spawnNode } from "../cli/helpers.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const nodeMajor = Number(process.versions.node.split(".")[0]);
const everythingVersion = (JSON.parse(readFileSync(join(root, "node_modules/@modelcontextprotocol/server-everything/package.json"), "utf8")) as { version: string }).version;

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, timeout = 240_000): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout, maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  return result;
}

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) filesUnder(path, out);
    else out.push(path);
  }
  return out;
}

/** The relative links of a markdown file (`[text](target)`), without their #fragment. */
function relativeLinks(markdown: string): string[] {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]).filter((target) => !/^[a-z]+:|^#/.test(target)).map((target) => target.replace(/#.*$/, ""));
}

describe("the packed package, installed into an empty app", () => {
  let scratch: string;
  let app: string;
  let installed: string;
  let packedFiles: string[];
  let installOutput: string;
  const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "agentloop-tarball-"));
    // The sources the package is built from, in a copy: `prepack` deletes and rebuilds dist there, not here.
    const sources = join(scratch, "sources");
    mkdirSync(sources);
    // What the build reads, and what package.json's `files` names (dist is what prepack builds).
    const { files } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { files: string[] };
    const shipped = files.filter((entry) => !entry.startsWith("!") && entry !== "dist");
    for (const entry of new Set(["package.json", "tsconfig.json", "tsconfig.build.json", "src", "examples", "studio", "scripts/build-studio.mjs", ...shipped])) {
      cpSync(join(root, entry), join(sources, entry), { recursive: true, filter: (path) => !path.endsWith(".test.ts") });
    }
    symlinkSync(join(root, "node_modules"), join(sources, "node_modules"), "dir");
    const packed = run(npm, ["pack", "--json", "--pack-destination", scratch], sources);
    assert.equal(packed.status, 0, `npm pack failed:\n${packed.stderr}`);
    const [report] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as Array<{ filename: string; files: Array<{ path: string }> }>;
    packedFiles = report.files.map((file) => file.path);

    app = join(scratch, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "empty-app", version: "1.0.0", private: true, type: "module" }));
    // The MCP reference server of examples/server/agent.yaml, which npx would otherwise fetch on first use.
    const extra = [`@modelcontextprotocol/server-everything@${everythingVersion}`, ...(nodeMajor >= 22 ? ["openai@7"] : [])];
    const install = run(npm, ["install", "--no-audit", "--no-fund", "--prefer-offline", join(scratch, report.filename), ...extra], app);
    installOutput = install.stdout + install.stderr;
    assert.equal(install.status, 0, `npm install failed:\n${installOutput}`);
    installed = join(app, "node_modules", "agentloop");
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));
  /** The CLI as npm linked it (node_modules/.bin/agentloop → the package's bin). */
  const installedCli = () => join(installed, "dist/src/cli/main.js");

  it("ships the LICENSE (Apache-2.0, as package.json says), the docs, and no build leftovers", () => {
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { license: string };
    assert.equal(manifest.license, "Apache-2.0");
    assert.match(readFileSync(join(installed, "LICENSE"), "utf8"), /Apache License\s+Version 2\.0, January 2004/);
    assert.ok(packedFiles.includes("docs/server.md"));
    assert.deepEqual(
      packedFiles.filter((path) => path.endsWith(".tsbuildinfo") || path.endsWith(".test.ts") || path.endsWith(".test.js") || path.startsWith("test/")),
      [],
    );
  });

  it("resolves every relative link of the README and the docs inside the package (they work from the npm page's file view)", () => {
    const broken: string[] = [];
    for (const page of ["README.md", "ARCHITECTURE.md", ...packedFiles.filter((path) => path.startsWith("docs/") && path.endsWith(".md"))]) {
      for (const target of relativeLinks(readFileSync(join(installed, page), "utf8"))) {
        const path = resolve(installed, dirname(page), target);
        if (!path.startsWith(installed) || !existsSync(path)) broken.push(`${page} → ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it("ships source maps that carry their sources", () => {
    const maps = filesUnder(join(installed, "dist")).filter((path) => path.endsWith(".map"));
    assert.ok(maps.length > 50, `${maps.length} source maps`);
    const without = maps.filter((path) => {
      const map = JSON.parse(readFileSync(path, "utf8")) as { sources: string[]; sourcesContent?: Array<string | null> };
      return map.sourcesContent?.length !== map.sources.length || map.sourcesContent.some((content) => typeof content !== "string" || content === "");
    });
    assert.deepEqual(without.map((path) => relative(installed, path)), []);
  });

  it("installs without install scripts (it is built in prepack, not in prepare)", () => {
    const { scripts = {} } = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { scripts?: Record<string, string> };
    assert.deepEqual(["preinstall", "install", "postinstall", "prepare"].filter((name) => name in scripts), []);
    assert.ok("prepack" in scripts);
    assert.doesNotMatch(installOutput, /agentloop@\S* \((preinstall|install|postinstall|prepare):/);
  });

  it("runs `npx agentloop` (the README's commands): --version, and the hotel demo", () => {
    const env = cleanEnv({ NO_COLOR: "1" });
    const versionRun = run(npm, ["exec", "--no", "--", "agentloop", "--version"], app, env);
    assert.equal(versionRun.status, 0, versionRun.stderr);
    assert.equal(versionRun.stdout.trim(), version);
    const demo = run(join(app, "node_modules/.bin/agentloop"), ["demo", "hotel", "--scenario", "2"], app, env);
    assert.equal(demo.status, 0, demo.stderr);
    assert.match(demo.stdout + demo.stderr, /COMPLETED · 3 model calls · 2 waves · 4 tool calls/);
  });

  it("runs the examples from node_modules/agentloop: the TypeScript source (tsx) and its compiled copy (node)", () => {
    const env = cleanEnv();
    const tsx = fileURLToPath(import.meta.resolve("tsx"));
    for (const args of [["--import", tsx, "node_modules/agentloop/examples/quickstart.ts"], ["node_modules/agentloop/dist/examples/quickstart.js"]]) {
      const example = run(process.execPath, args, app, env);
      assert.equal(example.status, 0, `${args.join(" ")}: ${example.stderr}`);
      assert.match(example.stdout, /Paris and Oslo are both 21°C and sunny today\.\nCOMPLETED after 2 model calls/);
    }
  });

  it("serves the example agent file from node_modules/agentloop: its MCP server starts and its echo tool answers", async () => {
    const script = JSON.stringify([JSON.stringify({ tool: "echo", arguments: { message: "from the tarball" } }), "{}", "The echo tool answered."]);
    const cli = spawnNode([installedCli(), "serve", "--agent", "node_modules/agentloop/examples/server/agent.yaml", "--tool-call-mode", "action", "--port", "0", "--host", "127.0.0.1", "--json"], cleanEnv({ DEBUG_MOCK_RESPONSES: script }), app);
    try {
      const url = await readyUrl(cli, 90_000);
      const ready = (await (await fetch(`${url}/ready`)).json()) as { status: string };
      assert.equal(ready.status, "ready");
      const response = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "t1", messages: [{ role: "user", content: "echo it" }] }) });
      assert.equal(response.status, 200);
      const { events } = (await (await fetch(`${url}/memory/events?session_id=t1`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      assert.match(JSON.stringify(events.find((event) => event.event_type === "tool_result")?.content), /Echo: from the tarball/);
      // The studio page is built into the package and served from it.
      const studio = await fetch(`${url}/studio`);
      assert.equal(studio.status, 200);
      assert.match(await studio.text(), /<script[^>]+src=/);
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
    }
  });

  it("works beside the app's own openai 7 on Node 22+ (agentloop keeps its openai 6): openaiChat with an openai 7 client", { skip: nodeMajor < 22 ? `openai 7 needs Node 22+; this is Node ${process.versions.node}` : false }, async () => {
    const appOpenai = JSON.parse(readFileSync(join(app, "node_modules/openai/package.json"), "utf8")) as { version: string };
    assert.match(appOpenai.version, /^7\./);
    const ownOpenai = JSON.parse(readFileSync(join(installed, "node_modules/openai/package.json"), "utf8")) as { version: string };
    assert.match(ownOpenai.version, /^6\./);
    const cli = spawnNode([installedCli(), "serve", "--port", "0", "--host", "127.0.0.1", "--json"], cleanEnv({ DEBUG_MOCK_RESPONSES: JSON.stringify(["Hello from the served agent."]), MEMORY_TYPE: "memory" }), app);
    try {
      const url = await readyUrl(cli, 60_000);
      const program = [
        'import OpenAI from "openai";',
        'import { Agent } from "agentloop";',
        'import { openaiChat } from "agentloop/openai";',
        `const client = new OpenAI({ baseURL: ${JSON.stringify(`${url}/v1`)}, apiKey: "unused" });`,
        'const agent = new Agent({ name: "client", model: openaiChat("served", { client }) });',
        'const result = await agent.run("hi");',
        "console.log(result.state, result.text);",
      ].join("\n");
      writeFileSync(join(app, "openai7.mjs"), program);
      const result = run(process.execPath, ["openai7.mjs"], app, cleanEnv());
      assert.equal(result.status, 0, result.stderr);
      assert.equal(result.stdout.trim(), "COMPLETED Hello from the served agent.");
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
    }
  });
});

describe("the agentloop command in a clone before its first build", () => {
  it("says to build first (exit 2), instead of a module-not-found stack", () => {
    const scratch = mkdtempSync(join(tmpdir(), "agentloop-unbuilt-"));
    try {
      mkdirSync(join(scratch, "bin"));
      cpSync(join(root, "bin/agentloop.js"), join(scratch, "bin/agentloop.js"));
      writeFileSync(join(scratch, "package.json"), JSON.stringify({ type: "module" }));
      const result = run(process.execPath, [join(scratch, "bin/agentloop.js"), "--version"], scratch);
      assert.equal(result.status, 2);
      assert.equal(result.stderr, "agentloop: the CLI is not built yet: run `npm run build` (or `npm run demo`) in this clone first\n");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});

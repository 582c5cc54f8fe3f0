// The CPU of one CLI child process, as the tests start ~150 of them per run: the CLI built as the
// test runner builds it (scripts/esbuild-node.mjs `cliBundleOptions`: the npm packages of its common
// paths bundled in) side by side with the same sources built with every npm package external (loaded
// from node_modules one module at a time, as the installed package loads them), rounds alternated.
// CPU (user + system of the CLI's own process, written by a preload at exit: an MCP server it starts
// is not counted) is what a busy shared machine inflates least.
// Usage: node --import tsx bench/cli-children.ts [rounds (default 8)] [case-name-filter ...]
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { cliBundleOptions, nodeBundleOptions } from "../scripts/esbuild-node.mjs";
import { benchFile } from "./child-process.js";

const repository = benchFile("..");
const out = join(repository, "node_modules", ".cache", "agentloop-bench", "cli-children");
const folder = mkdtempSync(join(tmpdir(), "agentloop-cli-children-"));
const agentFile = join(folder, "agent.yaml");
writeFileSync(agentFile, "name: file-agent\ninstructions: Use the echo tool.\nmemory:\n  type: memory\n");
const everything = `${process.execPath} ${join(repository, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")} stdio`;
const echoScript = JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c1", name: "echo", arguments: { message: "x" } }] }), "Echoed."]);

const cases: Array<{ name: string; args: string[]; input?: string }> = [
  { name: "--version", args: ["--version"] },
  { name: "run --mock", args: ["run", "hi", "--mock", '["hello"]'] },
  { name: "run --agent (yaml)", args: ["run", "hi", "--agent", agentFile, "--mock", '["hello"]'] },
  { name: "chat --mock", args: ["chat", "--mock", '["hello"]'], input: "hi\n/exit\n" },
  { name: "run --mcp (stdio server)", args: ["run", "echo it", "--agent", agentFile, "--mcp", everything, "--mock", echoScript] },
];

const CPU_PRELOAD = `data:text/javascript,${encodeURIComponent(
  'import { writeSync } from "node:fs"; process.on("exit", () => { const u = process.cpuUsage(); try { writeSync(3, String(u.user + u.system)); } catch {} });',
)}`;

/** The env without the caller's agent settings; chat's default store goes to the bench's folder. */
const env: NodeJS.ProcessEnv = { NO_COLOR: "1", MEMORY_TYPE: "memory" };
for (const [key, value] of Object.entries(process.env)) if (!/^(MEMORY_|AGENT_|MODEL_|MCP_|PEER_|DEBUG_MOCK|TOOL_CALL_MODE|OTEL_|NODE_COMPILE_CACHE)/.test(key)) env[key] ??= value;

function cpuMs(main: string, args: string[], input?: string): number {
  const result = spawnSync(process.execPath, ["--import", CPU_PRELOAD, main, ...args], { cwd: folder, env, input: input ?? "", stdio: ["pipe", "pipe", "pipe", "pipe"] });
  if (result.status !== 0) throw new Error(`${args.join(" ")} exited with ${result.status}: ${result.stderr.toString().slice(0, 500)}`);
  return Number(result.output[3]?.toString()) / 1000;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

const rounds = Number(process.argv[2] ?? 8);
const filters = process.argv.slice(3);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const builds = { external: join(out, "external"), bundled: join(out, "bundled") };
await build({ ...nodeBundleOptions, entryPoints: [join(repository, "src/cli/main.ts")], outdir: builds.external });
await build({ ...cliBundleOptions(), entryPoints: [join(repository, "src/cli/main.ts")], outdir: builds.bundled });
console.log(`${new Date().toISOString()} node ${process.version}, 1-minute load ${loadavg()[0]!.toFixed(1)}, ${rounds} rounds alternated`);
console.log("| case | packages external (ms CPU, median) | bundled (runner's CLI) | ratio |\n| --- | --- | --- | --- |");
try {
  for (const { name, args, input } of cases.filter((c) => filters.length === 0 || filters.some((f) => c.name.includes(f)))) {
    const times = { external: [] as number[], bundled: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (["external", "bundled"] as const) : (["bundled", "external"] as const);
      for (const which of order) times[which].push(cpuMs(join(builds[which], "main.mjs"), args, input));
    }
    const [a, b] = [median(times.external), median(times.bundled)];
    console.log(`| \`${name}\` | ${a.toFixed(0)} (${Math.min(...times.external).toFixed(0)}–${Math.max(...times.external).toFixed(0)}) | ${b.toFixed(0)} (${Math.min(...times.bundled).toFixed(0)}–${Math.max(...times.bundled).toFixed(0)}) | ${(b / a).toFixed(2)} |`);
  }
} finally {
  rmSync(folder, { recursive: true, force: true });
}
console.log(`1-minute load at the end ${loadavg()[0]!.toFixed(1)}`);

#!/usr/bin/env node
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance) client scenarios
// against agentloop's MCP client (scripts/conformance/mcp-client.ts, on this Node).
//
// The suite needs Node >= 22: unless this Node is new enough, a Node 22 runtime is installed from
// the npm registry (the `node` package) into a scratch folder, only to run the suite; the client
// under test stays on the Node that runs this script. The suite is installed there too.
//
//   node scripts/conformance/mcp.mjs [scenario ...]
//   AGENTLOOP_CONFORMANCE_DIR   scratch folder (default: <tmp>/agentloop-conformance)
//   MCP_CONFORMANCE_VERSION     the suite's version (default: latest)
//
// Prints one line per scenario, a summary, and as its LAST line one JSON object:
//   {"suite":"MCP (official)","version":"…","passed":N,"failed":N,"skipped":N}
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const scratch = process.env.AGENTLOOP_CONFORMANCE_DIR ?? join(tmpdir(), "agentloop-conformance");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** Scenarios agentloop does not take part in, and why (counted as skipped). */
const notApplicable = {
  "auth/cross-app-access-complete-flow":
    "enterprise-managed authorization (SEP-990: an IdP's ID token exchanged for an ID-JAG, then a JWT-bearer grant) needs a user's enterprise SSO session, which an agent runtime does not hold",
};

/** The client's metadata document URL the suite's CIMD scenario (auth/basic-cimd) expects as the client_id. */
const clientMetadataUrl = "https://conformance-test.local/client-metadata.json";

function install(prefix, spec) {
  mkdirSync(prefix, { recursive: true });
  const result = spawnSync(npm, ["install", "--no-audit", "--no-fund", "--prefix", prefix, spec], { stdio: ["ignore", "ignore", "inherit"] });
  if (result.status !== 0) throw new Error(`npm install ${spec} into ${prefix} failed`);
}

function suiteNode() {
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  const node = join(scratch, "node22", "node_modules", ".bin", process.platform === "win32" ? "node.cmd" : "node");
  if (!existsSync(node)) {
    process.stderr.write(`installing a Node 22 runtime into ${join(scratch, "node22")} (for the suite only)\n`);
    install(join(scratch, "node22"), "node@22");
  }
  return node;
}

function suiteEntry() {
  const version = process.env.MCP_CONFORMANCE_VERSION ?? "latest";
  const prefix = join(scratch, `mcp-suite-${version}`);
  const pkg = join(prefix, "node_modules", "@modelcontextprotocol", "conformance");
  if (!existsSync(join(pkg, "package.json"))) {
    process.stderr.write(`installing @modelcontextprotocol/conformance@${version} into ${prefix}\n`);
    install(prefix, `@modelcontextprotocol/conformance@${version}`);
  }
  const { version: installed, bin } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  return { entry: join(pkg, typeof bin === "string" ? bin : bin.conformance), version: installed };
}

function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, MCP_CLIENT_METADATA_URL: clientMetadataUrl } });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("close", (code) => resolve({ code, output }));
  });
}

const node = suiteNode();
const { entry, version } = suiteEntry();
const listed = await run(node, [entry, "list", "--client"]);
const all = [...listed.output.matchAll(/^\s+- (\S+)/gm)].map((match) => match[1]);
const wanted = process.argv.slice(2);
const scenarios = wanted.length > 0 ? all.filter((name) => wanted.includes(name)) : all;
const client = `${process.execPath} --import tsx scripts/conformance/mcp-client.ts`;
const results = join(scratch, "results");
let passed = 0;
let failed = 0;
let skipped = 0;
const queue = [...scenarios];
const plain = (text) => text.replace(/\u001b\[[0-9;]*m/g, "");
async function worker() {
  for (let scenario = queue.shift(); scenario; scenario = queue.shift()) {
    if (notApplicable[scenario]) {
      skipped++;
      process.stdout.write(`-  ${scenario}: skipped (${notApplicable[scenario]})\n`);
      continue;
    }
    const { code, output } = await run(node, [entry, "client", "--command", client, "--scenario", scenario, "--timeout", "60000", "-o", results]);
    if (code === 0) {
      passed++;
      process.stdout.write(`✓  ${scenario}\n`);
    } else {
      failed++;
      const reasons = [...plain(output).matchAll(/^\s+- (.+)$/gm)].map((match) => match[1]).slice(0, 3);
      process.stdout.write(`✗  ${scenario}${reasons.length > 0 ? `: ${reasons.join("; ")}` : ` (exit ${code})`}\n`);
    }
  }
}
// Two at a time: each scenario is a suite process and a client process.
await Promise.all([worker(), worker()]);
process.stdout.write(`MCP conformance ${version}: ${passed} passed, ${failed} failed, ${skipped} skipped (of ${scenarios.length} client scenarios)\n`);
process.stdout.write(`${JSON.stringify({ suite: "MCP (official)", version, passed, failed, skipped })}\n`);

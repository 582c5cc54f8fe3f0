/**
 * The MCP client under test for the official conformance suite (`scripts/conformance/mcp.mjs` runs
 * it): agentloop's own `McpToolset`, nothing else. The suite starts a server for one scenario, runs
 * this with the server's URL as the last argument and the scenario in MCP_CONFORMANCE_SCENARIO
 * (credentials, when the scenario has any, in MCP_CONFORMANCE_CONTEXT). It connects, lists the
 * tools and calls the ones a scenario is about; OAuth goes through the toolset's `auth`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { McpAuthConfig } from "../../src/mcp/auth.js";
import { connectMcp } from "../../src/mcp/index.js";

const url = process.argv.at(-1)!;
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as { client_id?: string; client_secret?: string; private_key_pem?: string; signing_algorithm?: string };
const tokenDir = mkdtempSync(join(tmpdir(), "agentloop-mcp-auth-"));

/** The browser's part of the authorization-code flow: the suite's server approves at once, so follow its redirects to our loopback callback. */
async function browse(authorizationUrl: string): Promise<void> {
  let next = authorizationUrl;
  for (let hop = 0; hop < 5; hop++) {
    const response = await fetch(next, { redirect: "manual" });
    const location = response.headers.get("location");
    if (!location) return;
    next = new URL(location, next).href;
    if (next.startsWith("http://127.0.0.1:") && next.includes("/callback")) {
      await fetch(next);
      return;
    }
  }
}

function auth(): McpAuthConfig | undefined {
  if (!scenario.startsWith("auth/")) return undefined;
  if (scenario.startsWith("auth/client-credentials") && context.client_id && context.private_key_pem) {
    // private_key_jwt; the algorithm comes from the key (the suite's is P-256: ES256).
    return { type: "client_credentials", clientId: context.client_id, privateKey: context.private_key_pem };
  }
  if (scenario.startsWith("auth/client-credentials") && context.client_id && context.client_secret) {
    return { type: "client_credentials", clientId: context.client_id, clientSecret: context.client_secret };
  }
  // The suite's URL-based client id (its CIMD scenario expects this one; mcp.mjs sets it, as a user sets MCP_CLIENT_METADATA_URL).
  const clientMetadataUrl = process.env.MCP_CLIENT_METADATA_URL || undefined;
  return { type: "authorization_code", clientId: context.client_id, clientSecret: context.client_secret, clientMetadataUrl, tokenDir, onAuthorizationUrl: browse, timeoutMs: 20_000 };
}

const toolset = await connectMcp({
  name: "conformance",
  url,
  appendMcpPath: false,
  auth: auth(),
  requestTimeoutMs: 20_000,
  // SEP-1034: the answer leaves every field out, so the client's defaults are what the server sees.
  onElicitation: async () => ({ action: "accept", content: {} }),
});
let failed = false;
try {
  for (const tool of toolset.serverToolDescriptions) {
    const properties = Object.keys((tool.inputSchema as { properties?: object }).properties ?? {});
    const args = Object.fromEntries(properties.map((name, index) => [name, index + 1]));
    const result = await toolset.callTool(tool.name, args);
    process.stdout.write(`${tool.name}: ${String(result.content).slice(0, 200)}\n`);
    if (result.isError) failed = true;
  }
} finally {
  await toolset.close();
  rmSync(tokenDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

// OAuth pieces that need no authorization server: the settings (agent file, MCP_SERVER_<NAME>_CLIENT_*),
// the token store (one 0600 file per server, read back by the next process), and the loopback
// redirect of the authorization-code flow (state checked). The flows themselves run against a real
// authorization server in test/mcp/oauth.test.ts, and against the official conformance suite's
// (scripts/conformance/mcp.mjs).
import assert from "node:assert/strict";
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { prepareAgentRuntime } from "../../src/config/build-agent.js";
import { parseAgentFile, settingsFrom } from "../../src/config/settings.js";
import { authProviderOf, clientMetadataDocument, type InteractiveAuthProvider, signingAlgorithmOf } from "../../src/mcp/auth.js";
import { mcpToolset } from "../../src/mcp/index.js";

describe("OAuth settings", () => {
  test("client credentials from MCP_SERVER_<NAME>_CLIENT_ID / _CLIENT_SECRET / _SCOPE, and from the agent file", () => {
    const fromEnv = settingsFrom({}, { MCP_SERVERS: "docs", MCP_SERVER_DOCS_URL: "http://docs:8000", MCP_SERVER_DOCS_CLIENT_ID: "id", MCP_SERVER_DOCS_CLIENT_SECRET: "secret", MCP_SERVER_DOCS_SCOPE: "read" });
    assert.deepEqual(fromEnv.mcpServers[0]?.auth, { flow: "client_credentials", clientId: "id", clientSecret: "secret", scope: "read" });
    const file = parseAgentFile("mcpServers:\n  docs:\n    url: http://docs:8000\n    auth: { clientId: id, clientSecret: s }\n  mine:\n    url: http://mine:8000\n    auth: { flow: authorization_code }\n");
    const settings = settingsFrom(file, {});
    assert.deepEqual(settings.mcpServers.map((server) => server.auth), [{ flow: "client_credentials", clientId: "id", clientSecret: "s" }, { flow: "authorization_code" }]);
  });

  test("bad OAuth settings name the problem", () => {
    assert.throws(() => settingsFrom({}, { MCP_SERVERS: "docs", MCP_SERVER_DOCS_URL: "http://docs:8000", MCP_SERVER_DOCS_CLIENT_ID: "id" }), /MCP_SERVER_DOCS_CLIENT_SECRET: is required with MCP_SERVER_DOCS_CLIENT_ID/);
    assert.throws(() => parseAgentFile("mcpServers:\n  fs:\n    command: mcp-fs\n    auth: { clientId: a, clientSecret: b }\n"), /mcpServers\.fs\.auth: OAuth applies to HTTP servers/);
    assert.throws(() => parseAgentFile("mcpServers:\n  d:\n    url: http://d\n    auth: { flow: client_credentials, clientId: a }\n"), /needs clientId and clientSecret/);
    assert.throws(() => parseAgentFile("mcpServers:\n  d:\n    url: http://d\n    auth: { password: x }\n"), /mcpServers\.d\.auth\.password: unknown setting/);
  });

  test("a client metadata URL (Client ID Metadata Document): per server in the agent file, or MCP_CLIENT_METADATA_URL for every authorization-code server", () => {
    const file = parseAgentFile(
      "mcpServers:\n  own:\n    url: http://own:8000\n    auth: { flow: authorization_code, clientMetadataUrl: https://me.example/own.json }\n  mine:\n    url: http://mine:8000\n    auth: { flow: authorization_code }\n  docs:\n    url: http://docs:8000\n    auth: { clientId: id, clientSecret: s }\n",
    );
    const settings = settingsFrom(file, { MCP_CLIENT_METADATA_URL: "https://me.example/agentloop.json" });
    assert.deepEqual(
      settings.mcpServers.map((server) => server.auth?.clientMetadataUrl),
      ["https://me.example/own.json", "https://me.example/agentloop.json", undefined],
    );
    assert.throws(() => settingsFrom(file, { MCP_CLIENT_METADATA_URL: "http://me.example/agentloop.json" }), /MCP_CLIENT_METADATA_URL: must be an https URL with a path/);
    assert.throws(() => settingsFrom(file, { MCP_CLIENT_METADATA_URL: "https://me.example/" }), /MCP_CLIENT_METADATA_URL: must be an https URL with a path/);
    assert.throws(() => parseAgentFile("mcpServers:\n  d:\n    url: http://d\n    auth: { clientId: a, clientSecret: b, clientMetadataUrl: https://x/y.json }\n"), /clientMetadataUrl: applies to the authorization-code flow/);
    assert.throws(
      () => mcpToolset({ name: "d", url: "http://d", auth: { type: "authorization_code", clientMetadataUrl: "http://x/y.json" } }),
      /MCP server "d": `auth.clientMetadataUrl` must be an https URL with a path/,
    );
    assert.deepEqual(clientMetadataDocument("https://me.example/agentloop.json").redirect_uris, ["http://127.0.0.1/callback"]);
    assert.equal(clientMetadataDocument("https://me.example/agentloop.json").client_id, "https://me.example/agentloop.json");
  });

  test("private_key_jwt: a key file instead of the secret (agent file, MCP_SERVER_<NAME>_PRIVATE_KEY_FILE); the algorithm from the key", () => {
    const fromEnv = settingsFrom({}, { MCP_SERVERS: "docs", MCP_SERVER_DOCS_URL: "http://docs:8000", MCP_SERVER_DOCS_CLIENT_ID: "id", MCP_SERVER_DOCS_PRIVATE_KEY_FILE: "/keys/docs.pem", MCP_SERVER_DOCS_ISSUER: "https://auth.docs" });
    assert.deepEqual(fromEnv.mcpServers[0]?.auth, { flow: "client_credentials", clientId: "id", privateKeyFile: "/keys/docs.pem", issuer: "https://auth.docs" });
    assert.throws(() => settingsFrom({}, { MCP_SERVERS: "docs", MCP_SERVER_DOCS_URL: "http://docs:8000", MCP_SERVER_DOCS_CLIENT_ID: "id", MCP_SERVER_DOCS_CLIENT_SECRET: "s", MCP_SERVER_DOCS_ISSUER: "auth.docs" }), /MCP_SERVER_DOCS_ISSUER: is not a valid URL/);
    assert.throws(() => parseAgentFile("mcpServers:\n  d:\n    url: http://d\n    auth: { flow: authorization_code, issuer: https://a }\n"), /auth\.issuer: applies to client credentials/);
    assert.throws(
      () => settingsFrom({}, { MCP_SERVERS: "docs", MCP_SERVER_DOCS_URL: "http://docs:8000", MCP_SERVER_DOCS_CLIENT_ID: "id", MCP_SERVER_DOCS_CLIENT_SECRET: "s", MCP_SERVER_DOCS_PRIVATE_KEY_FILE: "/k.pem" }),
      /MCP_SERVER_DOCS_PRIVATE_KEY_FILE: give MCP_SERVER_DOCS_CLIENT_SECRET or MCP_SERVER_DOCS_PRIVATE_KEY_FILE, not both/,
    );
    const file = settingsFrom(parseAgentFile("mcpServers:\n  docs:\n    url: http://docs:8000\n    auth: { clientId: id, privateKeyFile: /keys/docs.pem, algorithm: ES256 }\n"), {});
    assert.deepEqual(file.mcpServers[0]?.auth, { flow: "client_credentials", clientId: "id", privateKeyFile: "/keys/docs.pem", algorithm: "ES256" });
    const pem = (key: KeyObject) => key.export({ type: "pkcs8", format: "pem" }).toString();
    assert.equal(signingAlgorithmOf(pem(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey), "docs"), "ES256");
    assert.equal(signingAlgorithmOf(pem(generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey), "docs"), "RS256");
    assert.throws(() => signingAlgorithmOf("not a key", "docs"), /MCP server "docs": auth.privateKey is not a readable private key/);
    assert.throws(() => mcpToolset({ name: "d", url: "http://d", auth: { type: "client_credentials", clientId: "a" } }), /needs either `clientSecret` or `privateKey` \(private_key_jwt\), not neither/);
  });

  test("serve: a private key file that cannot be read is named at start", async () => {
    const settings = settingsFrom(parseAgentFile("mcpServers:\n  docs:\n    url: http://127.0.0.1:9/mcp\n    auth: { clientId: id, privateKeyFile: /nonexistent/docs.pem }\n"), { DEBUG_MOCK_RESPONSES: '["hi"]' });
    await assert.rejects(prepareAgentRuntime(settings), /mcpServers \(docs\): cannot read the private key file \/nonexistent\/docs\.pem/);
  });

  test("serve refuses the authorization-code flow (nobody to sign in), naming the server and the alternative", async () => {
    const settings = settingsFrom(parseAgentFile("mcpServers:\n  mine:\n    url: http://127.0.0.1:9/mcp\n    auth: { flow: authorization_code }\n"), { DEBUG_MOCK_RESPONSES: '["hi"]' });
    await assert.rejects(prepareAgentRuntime(settings), /mcpServers \(mine\): auth flow authorization_code needs a person to sign in.*MCP_SERVER_<NAME>_CLIENT_ID/);
  });
});

describe("the authorization-code flow's own parts", () => {
  test("tokens and the registration are stored per server with 0600 and read back by a new provider", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentloop-auth-"));
    try {
      const first = authProviderOf({ type: "authorization_code", tokenDir: join(dir, "tokens") }, "docs", "http://docs.example:8000/mcp") as InteractiveAuthProvider;
      first.saveClientInformation?.({ client_id: "registered" });
      first.saveTokens({ access_token: "a1", token_type: "Bearer", refresh_token: "r1" });
      first.saveCodeVerifier("verifier");
      const file = join(dir, "tokens", "docs.example_8000_mcp.json");
      assert.equal(statSync(file).mode & 0o777, 0o600);
      const second = authProviderOf({ type: "authorization_code", tokenDir: join(dir, "tokens") }, "docs", "http://docs.example:8000/mcp") as InteractiveAuthProvider;
      assert.equal((second.tokens() as { refresh_token?: string } | undefined)?.refresh_token, "r1");
      assert.equal((second.clientInformation() as { client_id: string } | undefined)?.client_id, "registered");
      assert.equal(second.codeVerifier(), "verifier");
      // Another server has its own file.
      const other = authProviderOf({ type: "authorization_code", tokenDir: join(dir, "tokens") }, "other", "http://other:1/mcp") as InteractiveAuthProvider;
      assert.equal(other.tokens(), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the loopback redirect hands over the code when the state matches, and refuses a forged one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "agentloop-auth-"));
    const printed: string[] = [];
    const provider = authProviderOf({ type: "authorization_code", tokenDir: dir, onAuthorizationUrl: (url) => void printed.push(url) }, "docs", "http://docs/mcp") as InteractiveAuthProvider;
    try {
      await provider.start();
      assert.match(provider.redirectUrl as string, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      await provider.redirectToAuthorization(new URL("https://auth.example/authorize?x=1"));
      assert.deepEqual(printed, ["https://auth.example/authorize?x=1"]);

      const state = await provider.state!();
      const forged = await fetch(`${provider.redirectUrl}?code=evil&state=nope`);
      assert.equal(forged.status, 400);
      await assert.rejects(provider.waitForAuthorizationCode(), /authorization failed: state mismatch/);

      const waiting = provider.waitForAuthorizationCode();
      const back = await fetch(`${provider.redirectUrl}?code=good&state=${state}`);
      assert.equal(back.status, 200);
      assert.equal(await waiting, "good");
    } finally {
      await provider.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

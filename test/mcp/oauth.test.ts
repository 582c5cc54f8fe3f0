// OAuth against a real authorization server and the MCP server it protects (test/mcp/fixtures/
// oauth-server.ts, HTTP on 127.0.0.1): client credentials (code, and `serve` from the environment),
// the authorization-code flow with PKCE (the test plays the browser by following the printed URL),
// tokens stored per server with 0600 and reused, refresh after expiry, and the error paths.
import assert from "node:assert/strict";
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { connectMcp } from "../../src/mcp/index.js";
import { cleanEnv, postChat, readyUrl, runCli, spawnCli } from "../cli/helpers.js";
import { type OAuthTestServer, startOAuthServer } from "./fixtures/oauth-server.js";

/** The browser: opens the authorization URL and follows the redirect back to the loopback callback. */
async function browse(authorizationUrl: string): Promise<string> {
  const approval = await fetch(authorizationUrl, { redirect: "manual" });
  const location = approval.headers.get("location");
  assert.ok(location, `the authorization server sent no redirect (HTTP ${approval.status})`);
  assert.match(location, /^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
  const back = await fetch(location);
  return back.text();
}

const notExpected = (url: string) => {
  throw new Error(`no sign-in expected, got ${url}`);
};

let server: OAuthTestServer;
let directory: string;
/** A folder no earlier run of this file used (the mutation runner runs the file again in one process): a sign-in is expected in it. */
let runs = 0;
const fresh = (name: string) => join(directory, `${name}-${++runs}`);
before(async () => {
  server = await startOAuthServer({ clients: { agent: "s3cret" } });
  directory = await mkdtemp(join(tmpdir(), "agentloop-oauth-"));
});
after(async () => {
  await server.close();
  await rm(directory, { recursive: true, force: true });
});

// Each test that counts grants or changes the server's behaviour has a server of its own, so the tests run concurrently.
describe("client credentials", { concurrency: true }, () => {
  test("the token is fetched with the secret and sent to the MCP server", async () => {
    const own = await startOAuthServer({ clients: { agent: "s3cret" } });
    const toolset = await connectMcp({ name: "docs", url: own.mcpUrl, auth: { type: "client_credentials", clientId: "agent", clientSecret: "s3cret" } });
    try {
      assert.deepEqual(await toolset.callTool("whoami", {}), { content: "client agent", isError: false });
      assert.deepEqual(own.grants, ["client_credentials"]);
      // An expired token: the client asks for a new one with its credentials.
      own.expireAccessTokens();
      assert.deepEqual(await toolset.callTool("whoami", {}), { content: "client agent", isError: false });
      assert.deepEqual(own.grants, ["client_credentials", "client_credentials"]);
    } finally {
      await toolset.close();
      await own.close();
    }
  });

  test("a bad client secret fails the connection with an error naming the server and the reason", async () => {
    await assert.rejects(
      connectMcp({ name: "docs", url: server.mcpUrl, auth: { type: "client_credentials", clientId: "agent", clientSecret: "wrong" } }),
      (error: Error) => {
        assert.match(error.message, /^MCP server "docs" \(http: http:\/\/127\.0\.0\.1:\d+\/mcp\): could not connect: .*client authentication failed/);
        return true;
      },
    );
  });

  test("with the authorization server's issuer set, the secret goes only there", async () => {
    const own = await startOAuthServer({ clients: { agent: "s3cret" } });
    try {
      const toolset = await connectMcp({ name: "docs", url: own.mcpUrl, auth: { type: "client_credentials", clientId: "agent", clientSecret: "s3cret", issuer: own.url } });
      assert.deepEqual(await toolset.callTool("whoami", {}), { content: "client agent", isError: false });
      await toolset.close();
      // The MCP server names an authorization server that is not the configured one: nothing is sent.
      await assert.rejects(
        connectMcp({ name: "docs", url: own.mcpUrl, auth: { type: "client_credentials", clientId: "agent", clientSecret: "s3cret", issuer: "https://auth.example" } }),
        /^AgentLoopError: MCP server "docs" .*could not connect: OAuth client information is bound to authorization server https:\/\/auth\.example/,
      );
      assert.deepEqual(own.grants, ["client_credentials"]);
    } finally {
      await own.close();
    }
  });

  test("private_key_jwt: the token request is signed with the key, its algorithm taken from the key or from `algorithm`", async () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-384" });
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }); // jose signs RSA with 2048 bits or more
    const pem = (key: KeyObject) => key.export({ type: "pkcs8", format: "pem" }).toString();
    const own = await startOAuthServer({ keyClients: { ec: ec.publicKey, rsa: rsa.publicKey } });
    try {
      const byKey = await connectMcp({ name: "docs", url: own.mcpUrl, auth: { type: "client_credentials", clientId: "ec", privateKey: pem(ec.privateKey) } });
      assert.deepEqual(await byKey.callTool("whoami", {}), { content: "client ec", isError: false });
      await byKey.close();
      const named = await connectMcp({ name: "docs", url: own.mcpUrl, auth: { type: "client_credentials", clientId: "rsa", privateKey: pem(rsa.privateKey), algorithm: "PS256" } });
      assert.deepEqual(await named.callTool("whoami", {}), { content: "client rsa", isError: false });
      await named.close();
      assert.deepEqual(own.assertionAlgorithms, ["ES384", "PS256"]);
      // A key the authorization server does not know for that client: refused there, the reason in the error.
      await assert.rejects(
        connectMcp({ name: "docs", url: own.mcpUrl, auth: { type: "client_credentials", clientId: "ec", privateKey: pem(rsa.privateKey) } }),
        /^AgentLoopError: MCP server "docs" .*could not connect: .*signature does not verify/,
      );
    } finally {
      await own.close();
    }
  });

  test("agentloop run with a bad secret from the environment stops at start (exit 2), naming the server and the reason", async () => {
    const env = cleanEnv({ MCP_SERVERS: "docs", MCP_SERVER_DOCS_URL: server.mcpUrl, MCP_SERVER_DOCS_CLIENT_ID: "agent", MCP_SERVER_DOCS_CLIENT_SECRET: "wrong", MCP_SERVER_DOCS_ISSUER: server.url, MEMORY_TYPE: "memory" });
    const result = await runCli(["run", "hi", "--mock", '["never"]'], env);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^agentloop: MCP server "docs" \(http: http:\/\/127\.0\.0\.1:\d+\/mcp\): could not connect: .*client authentication failed/);
    assert.doesNotMatch(result.stdout, /never/);
  });

  test("serve takes them from MCP_SERVER_<NAME>_CLIENT_ID / _CLIENT_SECRET", async () => {
    const whoami = JSON.stringify({ tool_calls: [{ id: "c1", name: "whoami", arguments: {} }] });
    const env = cleanEnv({ MCP_SERVERS: "docs", MCP_SERVER_DOCS_URL: server.mcpUrl, MCP_SERVER_DOCS_CLIENT_ID: "agent", MCP_SERVER_DOCS_CLIENT_SECRET: "s3cret", MCP_SERVER_DOCS_ISSUER: server.url, MEMORY_TYPE: "memory" });
    const cli = spawnCli(["serve", "--port", "0", "--host", "127.0.0.1", "--json", "--mock", JSON.stringify([whoami, "Done."])], env);
    try {
      const url = await readyUrl(cli);
      const response = await postChat(url, "who am I?", { session_id: "s1" });
      assert.equal(response.status, 200);
      assert.match(JSON.stringify(await (await fetch(`${url}/memory/events?session_id=s1`)).json()), /client agent/);
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
    }
  });
});

describe("authorization code with PKCE", { concurrency: true }, () => {
  test("sign in once through the loopback redirect; tokens stored per server with 0600 and reused; refreshed after expiry", async () => {
    const server = await startOAuthServer();
    const tokenDir = fresh("in-process");
    const printed: string[] = [];
    const first = await connectMcp({
      name: "mine",
      url: server.mcpUrl,
      auth: {
        type: "authorization_code",
        tokenDir,
        onAuthorizationUrl: async (url) => {
          printed.push(url);
          assert.match(await browse(url), /agentloop is authorized/);
        },
      },
    });
    let tokenFile: string;
    try {
      assert.equal(printed.length, 1);
      const authorization = new URL(printed[0]!);
      assert.equal(authorization.searchParams.get("code_challenge_method"), "S256");
      assert.equal(authorization.searchParams.get("resource"), server.mcpUrl);
      assert.match(String((await first.callTool("whoami", {})).content), /^client dyn-/);
      const files = await readdir(tokenDir);
      assert.equal(files.length, 1);
      tokenFile = join(tokenDir, files[0]!);
      assert.equal((await stat(tokenFile)).mode & 0o777, 0o600);
      const stored = JSON.parse(await readFile(tokenFile, "utf8")) as { tokens: { access_token: string; refresh_token: string }; client: { client_id: string } };
      assert.match(stored.tokens.refresh_token, /^rt-/);

      // Expired while connected: the next call refreshes the token and goes through.
      server.expireAccessTokens();
      assert.match(String((await first.callTool("whoami", {})).content), /^client dyn-/);
      assert.equal(server.grants.at(-1), "refresh_token");
      const refreshed = JSON.parse(await readFile(tokenFile, "utf8")) as typeof stored;
      assert.notEqual(refreshed.tokens.access_token, stored.tokens.access_token);
      assert.equal((await stat(tokenFile)).mode & 0o777, 0o600);
    } finally {
      await first.close();
    }

    // A new process (a new toolset) reads the stored tokens: no sign-in; after expiry, a refresh, still no sign-in.
    server.expireAccessTokens();
    const second = await connectMcp({ name: "mine", url: server.mcpUrl, auth: { type: "authorization_code", tokenDir, onAuthorizationUrl: notExpected } });
    try {
      assert.match(String((await second.callTool("whoami", {})).content), /^client dyn-/);
      assert.equal(server.grants.at(-1), "refresh_token");
      assert.equal(server.signIns, 1);
      assert.deepEqual(server.grants, ["authorization_code", "refresh_token", "refresh_token"]);
    } finally {
      await second.close();
      await server.close();
    }
  });

  test("tokens revoked while connected: the next call has the user sign in again and goes through; a refusal then is the call's error", async () => {
    const server = await startOAuthServer();
    const printed: string[] = [];
    const toolset = await connectMcp({
      name: "mine",
      url: server.mcpUrl,
      auth: {
        type: "authorization_code",
        tokenDir: fresh("revoked"),
        onAuthorizationUrl: (url) => {
          printed.push(url);
          void browse(url);
        },
      },
    });
    try {
      assert.equal(printed.length, 1);
      server.revokeTokens();
      assert.match(String((await toolset.callTool("whoami", {})).content), /^client dyn-/);
      assert.equal(printed.length, 2);
      assert.equal(server.signIns, 2);
      assert.equal(toolset.status, "connected");

      server.revokeTokens();
      server.refuseConsent = true;
      const refused = await toolset.callTool("whoami", {});
      assert.equal(refused.isError, true);
      assert.equal(refused.content, 'MCP server "mine", tool "whoami": authorization failed: MCP server "mine": authorization failed: access_denied (the user refused access)');
      assert.equal(printed.length, 3);
    } finally {
      await toolset.close();
      await server.close();
    }
  });

  test("closing the toolset stops the loopback redirect: its pinned port is free again", async () => {
    const own = await startOAuthServer();
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const callbackPort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const toolset = await connectMcp({ name: "mine", url: own.mcpUrl, auth: { type: "authorization_code", tokenDir: fresh("port"), callbackPort, onAuthorizationUrl: (url) => void browse(url) } });
    try {
      assert.match(String((await toolset.callTool("whoami", {})).content), /^client dyn-/);
    } finally {
      await toolset.close();
      await own.close();
    }
    const again = createServer();
    await new Promise<void>((resolve, reject) => {
      again.once("error", reject);
      again.listen(callbackPort, "127.0.0.1", resolve);
    });
    await new Promise((resolve) => again.close(resolve));
  });

  test("a refused consent fails the connection with an error naming the server and the reason", async () => {
    const server = await startOAuthServer();
    server.refuseConsent = true;
    try {
      await assert.rejects(
        connectMcp({ name: "mine", url: server.mcpUrl, auth: { type: "authorization_code", tokenDir: fresh("refused"), onAuthorizationUrl: (url) => void browse(url) } }),
        /^AgentLoopError: MCP server "mine" .*could not connect: .*authorization failed: access_denied \(the user refused access\)/,
      );
      assert.deepEqual(server.grants, []);
    } finally {
      await server.close();
    }
  });

  test("agentloop run prints the sign-in URL, and the next run reuses the stored tokens", async () => {
    const config = fresh("config");
    const agentFile = join(config, "agent.yaml");
    await mkdir(config, { recursive: true });
    await writeFile(agentFile, `name: signed-in\nmcpServers:\n  mine:\n    url: ${server.mcpUrl}\n    auth: { flow: authorization_code }\n`);
    const whoami = JSON.stringify({ tool_calls: [{ id: "c1", name: "whoami", arguments: {} }] });
    const env = cleanEnv({ XDG_CONFIG_HOME: config, MEMORY_TYPE: "memory" });
    const cli = spawnCli(["run", "who am I?", "--agent", agentFile, "--json", "--mock", JSON.stringify([whoami, "Done."])], env);
    const [, url] = (await cli.waitFor(/MCP server "mine" needs you to sign in: open\n\s+(\S+)\n/, "stderr")) as RegExpMatchArray;
    // (Before the fix, `run` exited with code 13 here: nothing kept it alive while it waited for the browser.)
    assert.match(await browse(url!), /agentloop is authorized/);
    const { code } = await cli.exited;
    assert.equal(code, 0, cli.stderr());
    assert.match(cli.stdout(), /client dyn-/);
    const tokenDir = join(config, "agentloop", "mcp-auth");
    const [file] = await readdir(tokenDir);
    assert.equal((await stat(join(tokenDir, file!))).mode & 0o777, 0o600);

    const again = await runCli(["run", "who am I?", "--agent", agentFile, "--json", "--mock", JSON.stringify([whoami, "Done."])], env);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /sign in/);
    assert.match(again.stdout, /client dyn-/);
  });

  test("with a client metadata URL, the URL is the client_id and nothing registers (Client ID Metadata Documents)", async () => {
    const server = await startOAuthServer({ clientIdMetadataDocuments: true });
    const clientMetadataUrl = "https://agent.example/oauth/client.json";
    const printed: string[] = [];
    const toolset = await connectMcp({
      name: "mine",
      url: server.mcpUrl,
      auth: {
        type: "authorization_code",
        clientMetadataUrl,
        tokenDir: fresh("cimd"),
        onAuthorizationUrl: async (url) => {
          printed.push(url);
          await browse(url);
        },
      },
    });
    try {
      assert.equal(String((await toolset.callTool("whoami", {})).content), `client ${clientMetadataUrl}`);
      assert.equal(new URL(printed[0]!).searchParams.get("client_id"), clientMetadataUrl);
      assert.equal(server.registrations, 0);
    } finally {
      await toolset.close();
      await server.close();
    }
  });
});

// OAuth pieces on the inputs the mutation run (npm run mutation -- src/mcp/auth.ts) showed untested:
// the client metadata document's options, the signing algorithm of each key type, the token folder's
// default, and the loopback redirect's every answer (another path, a refusal with and without its
// description, no code, a code before anyone waits, a timeout), the registration it sends, the
// pre-registered client, each kind of invalidation, and the token file's mode when it existed.
import assert from "node:assert/strict";
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { homedir, networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { authProviderOf, clientMetadataDocument, defaultTokenDir, type InteractiveAuthProvider, signingAlgorithmOf } from "../../src/mcp/auth.js";

const dir = mkdtempSync(join(tmpdir(), "agentloop-auth-mutation-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let count = 0;
const loopback = (options: Record<string, unknown> = {}, url = `http://server${++count}.example/mcp`) =>
  authProviderOf({ type: "authorization_code", tokenDir: dir, ...options }, "docs", url) as InteractiveAuthProvider;
const redirectOf = (provider: InteractiveAuthProvider) => String(provider.redirectUrl);
const pem = (key: KeyObject) => key.export({ type: "pkcs8", format: "pem" }).toString();

describe("OAuth configuration helpers", () => {
  test("no auth is no provider; a provider given is used as it is", () => {
    assert.equal(authProviderOf(undefined, "docs", "http://d/mcp"), undefined);
    const provider = { tokens: () => undefined } as unknown as OAuthClientProvider;
    assert.equal(authProviderOf({ provider }, "docs", "http://d/mcp"), provider);
  });

  test("clientMetadataDocument: defaults, a pinned port, a client name and a scope", () => {
    assert.deepEqual(clientMetadataDocument("https://me.example/client.json"), {
      client_id: "https://me.example/client.json",
      client_name: "agentloop",
      redirect_uris: ["http://127.0.0.1/callback"],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
    const pinned = clientMetadataDocument("https://me.example/c.json", { callbackPort: 8765, clientName: "mine", scope: "read write" });
    assert.deepEqual([pinned.redirect_uris, pinned.client_name, pinned.scope], [["http://127.0.0.1:8765/callback"], "mine", "read write"]);
  });

  test("signingAlgorithmOf: every supported key type, and the message for one that fits none", () => {
    assert.equal(signingAlgorithmOf(pem(generateKeyPairSync("rsa-pss", { modulusLength: 1024 }).privateKey), "docs"), "PS256");
    assert.equal(signingAlgorithmOf(pem(generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey), "docs"), "ES384");
    assert.equal(signingAlgorithmOf(pem(generateKeyPairSync("ec", { namedCurve: "P-521" }).privateKey), "docs"), "ES512");
    // A configuration error (the CLI stops at start with exit 2).
    assert.throws(() => signingAlgorithmOf("not a key", "docs"), { name: "AgentLoopError", kind: "configuration" });
    assert.throws(() => signingAlgorithmOf(pem(generateKeyPairSync("ec", { namedCurve: "secp256k1" }).privateKey), "docs"), {
      name: "AgentLoopError",
      kind: "configuration",
      message: 'MCP server "docs": auth.privateKey is a ec key; use an RSA or P-256/P-384/P-521 EC key, or set auth.algorithm',
    });
    assert.throws(() => signingAlgorithmOf(pem(generateKeyPairSync("ed25519").privateKey), "x"), {
      message: 'MCP server "x": auth.privateKey is a ed25519 key; use an RSA or P-256/P-384/P-521 EC key, or set auth.algorithm',
    });
  });

  test("defaultTokenDir: under XDG_CONFIG_HOME when set, else ~/.config", () => {
    assert.equal(defaultTokenDir({ XDG_CONFIG_HOME: "/cfg" }), "/cfg/agentloop/mcp-auth");
    assert.equal(defaultTokenDir({ XDG_CONFIG_HOME: "" }), join(homedir(), ".config", "agentloop", "mcp-auth"));
    assert.equal(defaultTokenDir({}), join(homedir(), ".config", "agentloop", "mcp-auth"));
  });
});

describe("the loopback redirect", () => {
  test("answers 404 off /callback; a refusal names the error and its description; no code is refused", async () => {
    const provider = loopback();
    await provider.start();
    await provider.start(); // a second start keeps the same listener
    try {
      const missing = await fetch(redirectOf(provider).replace("/callback", "/other?code=x"));
      assert.equal(missing.status, 404);
      const denied = await fetch(`${redirectOf(provider)}?error=access_denied&error_description=${encodeURIComponent("the user said no")}`);
      assert.equal(denied.status, 400);
      assert.equal(denied.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.equal(await denied.text(), "Authorization failed: access_denied (the user said no)");
      await assert.rejects(provider.waitForAuthorizationCode(), { message: 'MCP server "docs": authorization failed: access_denied (the user said no)' });

      const waiting = assert.rejects(provider.waitForAuthorizationCode(), { message: 'MCP server "docs": authorization failed: server_error' });
      const bare = await fetch(`${redirectOf(provider)}?error=server_error`);
      assert.equal(await bare.text(), "Authorization failed: server_error");
      await waiting;

      const noCode = await fetch(redirectOf(provider));
      assert.equal(noCode.status, 400);
      assert.equal(await noCode.text(), "Authorization failed: no code");
      await assert.rejects(provider.waitForAuthorizationCode(), /authorization failed: no code/);
    } finally {
      await provider.close();
      await provider.close();
    }
  });

  test("a code that came back before anyone waited is handed over; without a state asked for, any state is taken", async () => {
    const provider = loopback();
    await provider.start();
    try {
      const back = await fetch(`${redirectOf(provider)}?code=early&state=whatever`);
      assert.equal(back.status, 200);
      assert.equal(await back.text(), "agentloop is authorized. You can close this tab.");
      assert.equal(await provider.waitForAuthorizationCode(), "early");
    } finally {
      await provider.close();
    }
  });

  test("listens on the pinned callback port, and gives up after timeoutMs, saying so in seconds", async () => {
    const probe = loopback();
    await probe.start();
    const port = Number(new URL(redirectOf(probe)).port);
    await probe.close();
    const provider = loopback({ callbackPort: port, timeoutMs: 1_400 });
    await provider.start();
    try {
      assert.equal(provider.redirectUrl, `http://127.0.0.1:${port}/callback`);
      await assert.rejects(provider.waitForAuthorizationCode(), { message: 'MCP server "docs": nobody completed the authorization within 1 s' });
      // The waiter is gone: a code arriving now is kept for the next wait.
      await fetch(`${redirectOf(provider)}?code=late`);
      assert.equal(await provider.waitForAuthorizationCode(), "late");
    } finally {
      await provider.close();
    }
  });

  test("a pinned callback port already taken fails start() with the reason (no crash)", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      await assert.rejects(loopback({ callbackPort: port }).start(), { code: "EADDRINUSE" });
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  test("the redirect listens on 127.0.0.1 only: another address of the machine reaches nothing", async (t) => {
    const other = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && !address.internal && address.family === "IPv4")?.address;
    if (!other) return t.skip("this machine has no non-loopback IPv4 address");
    const provider = loopback();
    await provider.start();
    try {
      const port = new URL(redirectOf(provider)).port;
      assert.equal((await fetch(`${redirectOf(provider)}?code=here`)).status, 200);
      await assert.rejects(fetch(`http://${other}:${port}/callback?code=forged`), (error: Error) => (error.cause as { code?: string } | undefined)?.code === "ECONNREFUSED");
    } finally {
      await provider.close();
    }
  });

  test("closed while someone signs in: the wait still ends with its timeout, and a wait after close too", async () => {
    const provider = loopback({ timeoutMs: 50 });
    await provider.start();
    const waiting = provider.waitForAuthorizationCode();
    await provider.close();
    await assert.rejects(waiting, { message: 'MCP server "docs": nobody completed the authorization within 0 s' });
    await assert.rejects(async () => provider.waitForAuthorizationCode(), { message: 'MCP server "docs": nobody completed the authorization within 0 s' });
  });

  test("the sign-in URL goes to stderr without onAuthorizationUrl", async () => {
    const provider = loopback();
    const written: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => written.push(chunk) > 0) as typeof process.stderr.write;
    try {
      await provider.redirectToAuthorization(new URL("https://auth.example/authorize?a=1"));
    } finally {
      process.stderr.write = write;
    }
    assert.deepEqual(written, ['MCP server "docs" needs you to sign in: open\n  https://auth.example/authorize?a=1\n']);
  });
});

describe("the authorization-code provider's registration and store", () => {
  test("the registration it sends: a public client, or client_secret_post with a secret; the scope when given", () => {
    const plain = loopback();
    assert.deepEqual(plain.clientMetadata, {
      client_name: "agentloop",
      redirect_uris: [plain.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
    const confidential = loopback({ clientSecret: "s", scope: "tools" });
    assert.equal(confidential.clientMetadata.token_endpoint_auth_method, "client_secret_post");
    assert.equal(confidential.clientMetadata.scope, "tools");
    assert.equal(loopback({ clientMetadataUrl: "https://me.example/c.json" }).clientMetadataUrl, "https://me.example/c.json");
  });

  test("a pre-registered client is used instead of a stored registration, with its secret when it has one", () => {
    const url = "http://prereg.example/mcp";
    loopback({}, url).saveClientInformation?.({ client_id: "stored" });
    assert.deepEqual(loopback({ clientId: "given" }, url).clientInformation(), { client_id: "given" });
    assert.deepEqual(loopback({ clientId: "given", clientSecret: "s" }, url).clientInformation(), { client_id: "given", client_secret: "s" });
    assert.deepEqual(loopback({}, url).clientInformation(), { client_id: "stored" });
  });

  test("each invalidation forgets only its part; a missing code verifier is an error naming the server", () => {
    const url = "http://invalidate.example/mcp";
    const fill = () => {
      const provider = loopback({}, url);
      provider.invalidateCredentials?.("all");
      provider.saveClientInformation?.({ client_id: "c" });
      provider.saveTokens({ access_token: "a", token_type: "Bearer" });
      provider.saveCodeVerifier("v");
      return provider;
    };
    const state = (provider: InteractiveAuthProvider) => [(provider.clientInformation() as { client_id?: string } | undefined)?.client_id, (provider.tokens() as { access_token?: string } | undefined)?.access_token, (() => { try { return provider.codeVerifier(); } catch { return undefined; } })()];
    let provider = fill();
    provider.invalidateCredentials?.("client");
    assert.deepEqual(state(provider), [undefined, "a", "v"]);
    provider = fill();
    provider.invalidateCredentials?.("tokens");
    assert.deepEqual(state(provider), ["c", undefined, "v"]);
    provider = fill();
    provider.invalidateCredentials?.("verifier");
    assert.deepEqual(state(provider), ["c", "a", undefined]);
    assert.throws(() => provider.codeVerifier(), { message: 'MCP server "docs": no PKCE code verifier saved' });
    provider = fill();
    provider.invalidateCredentials?.("discovery");
    assert.deepEqual(state(provider), ["c", "a", "v"]);
    provider.invalidateCredentials?.("all");
    assert.deepEqual(state(provider), [undefined, undefined, undefined]);
  });

  test("the store: one file per server URL with unsafe characters replaced, tightened to 0600 when it existed, unreadable is empty", () => {
    const url = "https://host.example:8443/a b/mcp?x=1";
    const file = join(dir, "host.example_8443_a_b_mcp_x_1.json");
    writeFileSync(file, "{}", { mode: 0o644 });
    chmodSync(file, 0o644);
    loopback({}, url).saveTokens({ access_token: "t", token_type: "Bearer" });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), { tokens: { access_token: "t", token_type: "Bearer" } });
    assert.ok(readFileSync(file, "utf8").endsWith("}\n"));
    writeFileSync(file, "not json");
    assert.equal(loopback({}, url).tokens(), undefined);
    // A run of unsafe characters is one "_".
    loopback({}, "http://runs.example//a?/b").saveTokens({ access_token: "r", token_type: "Bearer" });
    assert.deepEqual(JSON.parse(readFileSync(join(dir, "runs.example_a_b.json"), "utf8")).tokens.access_token, "r");
  });
});

// An MCP server's config as mcpToolset checks it, on the inputs the mutation run (npm run mutation --
// src/mcp/config.ts) showed untested: each refusal with its exact message, the limits of each number
// (0, negative, not finite, not a number), OAuth settings, and the URL and tool-name rules' edges.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { exposedToolName, type McpServerConfig, mcpToolset, normalizeMcpUrl } from "../../src/mcp/index.js";

/** The configuration error `config` is refused with: its message. */
function refusal(config: unknown): string {
  try {
    mcpToolset(config as McpServerConfig);
  } catch (error) {
    assert.ok(AgentLoopError.isInstance(error), String(error));
    assert.equal(error.kind, "configuration");
    return error.message;
  }
  return assert.fail(`accepted ${JSON.stringify(config)}`);
}

/** mcpToolset accepts `config` (it does not connect before it is used). */
function accepted(config: McpServerConfig): void {
  assert.doesNotThrow(() => mcpToolset(config), JSON.stringify(config));
}

describe("validateMcpConfig through mcpToolset", () => {
  test("the config itself, its name and its transport", () => {
    assert.equal(refusal(null), "MCP server config must be an object");
    assert.equal(refusal("fs"), "MCP server config must be an object");
    for (const name of [undefined, 42, "", "   "]) assert.equal(refusal({ name, command: "x" }), "MCP server config needs a non-empty `name`", String(name));
    assert.equal(refusal({ name: "a", command: undefined, url: undefined }), 'MCP server "a": needs `command` (stdio) or `url` (Streamable HTTP)');
    assert.equal(refusal({ name: "a", command: "x", url: "http://h" }), 'MCP server "a": give either `command` (stdio) or `url` (HTTP), not both');
    for (const command of ["", "  ", 42]) assert.equal(refusal({ name: "a", command }), 'MCP server "a": `command` must be a non-empty string', String(command));
    for (const args of ["-v", [1], ["ok", null]]) assert.equal(refusal({ name: "a", command: "x", args }), 'MCP server "a": `args` must be an array of strings', JSON.stringify(args));
    accepted({ name: "a", command: "x", url: undefined } as McpServerConfig);
    accepted({ name: "a", command: undefined, url: "http://h" } as unknown as McpServerConfig);
    accepted({ name: "a", command: "x", args: [] });
    accepted({ name: "a", command: "x", args: ["-y", "pkg"] });
  });

  test("client-credentials auth needs a client id and exactly one of a secret or a private key", () => {
    const http = (auth: Record<string, unknown>) => ({ name: "s", url: "https://h/mcp", auth: { type: "client_credentials", ...auth } });
    assert.equal(refusal(http({ clientSecret: "x" })), 'MCP server "s": client-credentials auth needs `clientId`');
    assert.equal(refusal(http({ clientId: "", clientSecret: "x" })), 'MCP server "s": client-credentials auth needs `clientId`');
    assert.equal(refusal(http({ clientId: 7, clientSecret: "x" })), 'MCP server "s": client-credentials auth needs `clientId`');
    assert.equal(refusal(http({ clientId: "c" })), 'MCP server "s": client-credentials auth needs either `clientSecret` or `privateKey` (private_key_jwt), not neither');
    assert.equal(refusal(http({ clientId: "c", clientSecret: "x", privateKey: "k" })), 'MCP server "s": client-credentials auth needs either `clientSecret` or `privateKey` (private_key_jwt), not both');
    accepted(http({ clientId: "c", clientSecret: "x" }) as McpServerConfig);
    accepted(http({ clientId: "c", privateKey: "k", algorithm: "RS256" }) as McpServerConfig);
    // Another kind of auth is not held to those rules.
    accepted({ name: "s", url: "https://h/mcp", auth: { type: "authorization_code" } } as McpServerConfig);
  });

  test("an authorization-code client metadata URL must be https with a path", () => {
    const http = (clientMetadataUrl: unknown) => ({ name: "s", url: "https://h/mcp", auth: { type: "authorization_code", clientMetadataUrl } });
    for (const url of ["http://client.example/meta.json", "https://client.example", "https://client.example/", "not a url", 42]) {
      assert.equal(refusal(http(url)), `MCP server "s": \`auth.clientMetadataUrl\` must be an https URL with a path, got ${JSON.stringify(url)}`, String(url));
    }
    // A URL object is not the string the option takes (the client_id sent must be the exact text).
    assert.equal(refusal(http(new URL("https://client.example/meta.json"))), 'MCP server "s": `auth.clientMetadataUrl` must be an https URL with a path, got "https://client.example/meta.json"');
    accepted(http("https://client.example/meta.json") as McpServerConfig);
  });

  test("each number's limits, named in the message", () => {
    for (const maxReconnects of [-1, 1.5, Number.NaN]) assert.equal(refusal({ name: "a", command: "x", maxReconnects }), 'MCP server "a": `maxReconnects` must be a non-negative integer');
    accepted({ name: "a", command: "x", maxReconnects: 0 });
    for (const key of ["reconnectDelayMs", "maxReconnectDelayMs", "pingIntervalMs"]) {
      for (const value of [-1, Number.POSITIVE_INFINITY, "5"]) {
        assert.equal(refusal({ name: "a", command: "x", [key]: value }), `MCP server "a": \`${key}\` must be a non-negative number of milliseconds`, `${key}=${value}`);
      }
      accepted({ name: "a", command: "x", [key]: 0 });
    }
    for (const key of ["requestTimeoutMs", "connectTimeoutMs", "toolTimeoutMs"]) {
      for (const value of [0, -1, Number.POSITIVE_INFINITY, "5"]) {
        assert.equal(refusal({ name: "a", command: "x", [key]: value }), `MCP server "a": \`${key}\` must be a positive number of milliseconds`, `${key}=${value}`);
      }
      accepted({ name: "a", command: "x", [key]: 0.5 });
    }
  });
});

describe("URL and naming edges", () => {
  test("normalizeMcpUrl: https, trailing slashes, a path ending in mcp without the slash, its messages", () => {
    assert.equal(normalizeMcpUrl("https://host/api//").href, "https://host/api/mcp");
    assert.equal(normalizeMcpUrl("http://host/mcpx").href, "http://host/mcpx/mcp");
    assert.equal(normalizeMcpUrl("http://host/v1/mcp").href, "http://host/v1/mcp");
    assert.throws(() => normalizeMcpUrl("nope"), { message: 'MCP server "?": `url` is not a valid URL: "nope"' });
    assert.throws(() => normalizeMcpUrl("ws://host/mcp", true, "w"), { message: 'MCP server "w": `url` must be http or https, got ws:' });
    assert.equal(refusal({ name: "h", url: "file:///tmp/x" }), 'MCP server "h": `url` must be http or https, got file:');
  });

  test("exposedToolName: the separator with the server's name as prefix", () => {
    assert.equal(exposedToolName("fs", "read", { separator: "__" }), "fs__read");
    assert.equal(exposedToolName("fs", "read", { prefix: "x", separator: "" }), "xread");
  });
});

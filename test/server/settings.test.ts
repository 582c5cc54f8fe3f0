import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createAgentServer, parseAgentFile, resolveAgentSettings, settingsFrom } from "../../src/server/index.js";

const configurationError = (pattern: RegExp) => (error: unknown) => {
  assert.equal((error as { kind?: string }).kind, "configuration");
  assert.match((error as Error).message, pattern);
  return true;
};

describe("agent settings from the KAOS variables", () => {
  it("applies the KAOS defaults", () => {
    const settings = settingsFrom({}, {});
    assert.equal(settings.maxSteps, 5);
    assert.equal(settings.port, 8000);
    assert.equal(settings.toolCallMode, "auto");
    assert.deepEqual(settings.mcpServers, []);
    assert.deepEqual(settings.subAgents, []);
    assert.equal(settings.apiKey, undefined);
  });

  it("reads every variable", () => {
    const settings = settingsFrom(
      {},
      {
        AGENT_NAME: "coordinator",
        AGENT_DESCRIPTION: "Coordinates",
        AGENT_INSTRUCTIONS: "Be brief.",
        MODEL_API_URL: "http://ollama:11434",
        MODEL_NAME: "llama3.2",
        AGENTIC_LOOP_MAX_STEPS: "7",
        TOOL_CALL_MODE: "string",
        MCP_SERVERS: "echo-server,calc",
        "MCP_SERVER_echo-server_URL": "http://echo:8000/mcp",
        MCP_SERVER_CALC_URL: "http://calc:8000",
        AGENT_SUB_AGENTS: "researcher:http://researcher:8000,writer:http://writer:8000/",
        MEMORY_ENABLED: "false",
        MEMORY_CONTEXT_LIMIT: "3",
        AGENT_PORT: "9000",
        AGENT_API_KEY: "k",
        DEBUG_MOCK_RESPONSES: '["hi"]',
      },
    );
    assert.equal(settings.name, "coordinator");
    assert.equal(settings.description, "Coordinates");
    assert.equal(settings.instructions, "Be brief.");
    assert.equal(settings.modelApiUrl, "http://ollama:11434");
    assert.equal(settings.modelName, "llama3.2");
    assert.equal(settings.maxSteps, 7);
    assert.equal(settings.toolCallMode, "string");
    assert.deepEqual(settings.mcpServers, [
      { name: "echo-server", url: "http://echo:8000/mcp" },
      { name: "calc", url: "http://calc:8000" },
    ]);
    assert.deepEqual(settings.subAgents, [
      // KAOS's RemoteAgent reads a peer's card at <base>/.well-known/agent.
      { name: "researcher", url: "http://researcher:8000", protocol: "kaos", cardUrl: "http://researcher:8000/.well-known/agent" },
      { name: "writer", url: "http://writer:8000/", protocol: "kaos", cardUrl: "http://writer:8000/.well-known/agent" },
    ]);
    assert.deepEqual(settings.memoryEnv, { MEMORY_ENABLED: "false", MEMORY_CONTEXT_LIMIT: "3" });
    assert.equal(settings.port, 9000);
    assert.equal(settings.apiKey, "k");
    assert.equal(settings.mockResponses, '["hi"]');
  });

  it("reads MCP_SERVERS in the operator's bracket form", () => {
    const settings = settingsFrom({}, { MCP_SERVERS: "[calc, echo-server]", MCP_SERVER_CALC_URL: "http://calc:8000", MCP_SERVER_ECHO_SERVER_URL: "http://echo:8000" });
    assert.deepEqual(
      settings.mcpServers.map((server) => [server.name, server.url]),
      [
        ["calc", "http://calc:8000"],
        ["echo-server", "http://echo:8000"],
      ],
    );
  });

  it("reads PEER_AGENTS with PEER_AGENT_<NAME>_CARD_URL", () => {
    const settings = settingsFrom({}, { PEER_AGENTS: "worker-1", PEER_AGENT_WORKER_1_CARD_URL: "http://worker-1:8000/.well-known/agent.json" });
    assert.deepEqual(settings.subAgents, [{ name: "worker-1", url: "http://worker-1:8000", protocol: "kaos", cardUrl: "http://worker-1:8000/.well-known/agent.json" }]);
    // The operator may give the base URL, as KAOS's RemoteAgent expects.
    assert.deepEqual(settingsFrom({}, { PEER_AGENTS: "w", PEER_AGENT_W_CARD_URL: "http://w:8000" }).subAgents, [
      { name: "w", url: "http://w:8000", protocol: "kaos", cardUrl: "http://w:8000/.well-known/agent" },
    ]);
  });

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ AGENTIC_LOOP_MAX_STEPS: "zero" }, /^AGENTIC_LOOP_MAX_STEPS: must be a positive integer/],
    [{ AGENTIC_LOOP_MAX_STEPS: "0" }, /^AGENTIC_LOOP_MAX_STEPS/],
    [{ AGENT_PORT: "99999" }, /^AGENT_PORT: must be a port number/],
    [{ TOOL_CALL_MODE: "telepathy" }, /^TOOL_CALL_MODE: must be one of/],
    [{ MODEL_API_URL: "not a url" }, /^MODEL_API_URL: is not a valid URL/],
    [{ MCP_SERVERS: "calc" }, /^MCP_SERVER_CALC_URL: is required because MCP_SERVERS lists "calc"/],
    [{ MCP_SERVERS: "calc", MCP_SERVER_CALC_URL: "ftp://x" }, /^MCP_SERVER_CALC_URL: must be an http\(s\) URL/],
    [{ AGENT_SUB_AGENTS: "researcher" }, /^AGENT_SUB_AGENTS: entry "researcher" must be name:url/],
    [{ AGENT_SUB_AGENTS: "a:http://a:1,a:http://b:1" }, /agent "a" is listed twice/],
    [{ PEER_AGENTS: "worker" }, /^PEER_AGENT_WORKER_CARD_URL: is required/],
    [{ AGENT_NAME: "has spaces" }, /^AGENT_NAME: must be a name/],
  ];
  for (const [env, pattern] of bad) {
    it(`fails naming the setting: ${Object.keys(env).join(", ")}=${Object.values(env).join(", ")}`, () => {
      assert.throws(() => settingsFrom({}, env), configurationError(pattern));
    });
  }
});

describe("agent files", () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), "agentloop-settings-"));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  it("reads a YAML agent file; a set variable wins over the file", async () => {
    const path = join(directory, "agent.yaml");
    await writeFile(
      path,
      [
        "name: researcher",
        "description: Finds things",
        "instructions: |",
        "  Research carefully.",
        "model: openai:gpt-4.1",
        "maxSteps: 8",
        "toolCallMode: native",
        "mcpServers:",
        "  - name: fs",
        "    command: npx",
        "    args: [-y, '@modelcontextprotocol/server-filesystem', /tmp]",
        "  - name: search",
        "    url: http://search:8000/mcp",
        "subAgents:",
        "  - name: writer",
        "    url: http://writer:8000",
        "  - name: remote",
        "    url: https://remote.example/",
        "    protocol: a2a",
        "memory:",
        "  type: memory",
        "  contextLimit: 4",
      ].join("\n"),
    );
    const settings = await resolveAgentSettings({ agentFile: path, env: { AGENTIC_LOOP_MAX_STEPS: "3" } });
    assert.equal(settings.name, "researcher");
    assert.equal(settings.instructions, "Research carefully.\n");
    assert.equal(settings.model, "openai:gpt-4.1");
    assert.equal(settings.maxSteps, 3);
    assert.equal(settings.toolCallMode, "native");
    assert.deepEqual(settings.mcpServers, [
      { name: "fs", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
      { name: "search", url: "http://search:8000/mcp" },
    ]);
    assert.equal(settings.subAgents[0].protocol, "kaos");
    assert.equal(settings.subAgents[1].protocol, "a2a");
    assert.deepEqual(settings.memoryEnv, { MEMORY_TYPE: "memory", MEMORY_CONTEXT_LIMIT: "4" });
  });

  it("names the file and the field of a bad setting", () => {
    assert.throws(() => parseAgentFile("maxSteps: -1", "a.yaml"), configurationError(/^a\.yaml: maxSteps: must be a positive integer/));
    assert.throws(() => parseAgentFile("nme: x", "a.yaml"), configurationError(/^a\.yaml: unknown setting "nme"/));
    assert.throws(() => parseAgentFile("name: [1", "a.yaml"), configurationError(/^a\.yaml: invalid YAML/));
    assert.throws(() => parseAgentFile("- a\n- b", "a.yaml"), configurationError(/must be a YAML mapping/));
    assert.throws(() => parseAgentFile("mcpServers:\n  - name: x", "a.yaml"), configurationError(/mcpServers\[0\]: needs exactly one of url or command/));
    assert.throws(() => parseAgentFile("subAgents:\n  - name: w\n    url: http://w\n    protocol: grpc", "a.yaml"), configurationError(/subAgents\[0\]\.protocol: must be kaos or a2a/));
    assert.throws(() => parseAgentFile("memory:\n  sizeLimit: 3", "a.yaml"), configurationError(/memory\.sizeLimit: unknown memory setting/));
  });

  it("fails when the file is missing", async () => {
    await assert.rejects(resolveAgentSettings({ agentFile: join(directory, "missing.yaml"), env: {} }), configurationError(/missing\.yaml: cannot be read/));
  });
});

describe("the server fails at start on bad configuration", () => {
  it("names a bad variable", async () => {
    await assert.rejects(createAgentServer({ env: { DEBUG_MOCK_RESPONSES: '["x"]', AGENTIC_LOOP_MAX_STEPS: "many" }, memory: false }), configurationError(/AGENTIC_LOOP_MAX_STEPS/));
  });
  it("names a bad memory setting", async () => {
    await assert.rejects(createAgentServer({ env: { DEBUG_MOCK_RESPONSES: '["x"]', MEMORY_TYPE: "floppy" } }), configurationError(/MEMORY_TYPE/));
  });
  it("says how to configure a model when none is", async () => {
    await assert.rejects(createAgentServer({ env: {}, memory: false }), configurationError(/^model: no model configured/));
  });
  it("names MODEL_API_URL when only MODEL_NAME is set", async () => {
    await assert.rejects(createAgentServer({ env: { MODEL_NAME: "llama3.2" }, memory: false }), configurationError(/^MODEL_API_URL/));
  });
  it("reports a port in use naming AGENT_PORT", async () => {
    const first = await createAgentServer({ env: { DEBUG_MOCK_RESPONSES: '["x"]' }, memory: false, log: () => {} });
    const url = await first.listen(0, "127.0.0.1");
    const second = await createAgentServer({ env: { DEBUG_MOCK_RESPONSES: '["x"]' }, memory: false, log: () => {} });
    try {
      await assert.rejects(second.listen(Number(new URL(url).port), "127.0.0.1"), configurationError(/^AGENT_PORT: port \d+ is already in use/));
    } finally {
      await second.close();
      await first.close();
    }
  });
});

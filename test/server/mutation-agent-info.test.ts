// `GET /v1/agent`'s edges (src/server/routes/agent-info.ts): secrets of any length in their
// fields, a password inside free text, an empty secret, the guardrails, a model given in code, and
// an agent that could not be built; and where the studio page is read from (routes/studio.ts).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { defineTool, ScriptedModel } from "../../src/index.js";
import { startTestServer, type TestServer } from "./helpers.js";

const getJson = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, text: await response.text() };
};

describe("GET /v1/agent: what is redacted and what is shown", () => {
  let folder: string;
  let test: TestServer;
  before(async () => {
    folder = await mkdtemp(join(tmpdir(), "agentloop-agent-info-edges-"));
    const file = join(folder, "agent.yaml");
    await writeFile(join(folder, "key.pem"), "not a key");
    await writeFile(
      file,
      [
        "name: edges",
        "description: Shows its edges.",
        "instructions: 'Say t0k never. Mail me@example.org, see http://docs.example:8080/a:b@c and https://bob:hunter2@db.example/x.'",
        "guardrails:",
        "  deniedTools:",
        "    - tools: shell_*",
        "      reason: no shell here",
        "mcpServers:",
        "  - name: oauth",
        "    url: http://127.0.0.1:9",
        "    auth: { clientId: me, clientSecret: q7 }",
        "  - name: keyed",
        "    url: http://127.0.0.1:9/keyed",
        `    auth: { clientId: me, privateKeyFile: ${join(folder, "key.pem")} }`,
        "  - name: local",
        "    command: definitely-not-a-command-xyz",
        "    env: { EMPTY: '', SHORT: t0k }",
      ].join("\n"),
    );
    test = await startTestServer({}, { agentFile: file, readyTimeoutMs: 300, build: { model: new ScriptedModel(["ok"]) } });
  });
  after(async () => {
    await test.close();
    await rm(folder, { recursive: true, force: true });
  });

  it("redacts a secret however short in its own field, and a secret of three characters anywhere; an empty one changes nothing", async () => {
    const { status, text } = await getJson(`${test.url}/v1/agent`);
    assert.equal(status, 200);
    const info = JSON.parse(text);
    const byName = Object.fromEntries(info.mcpServers.map((entry: { name: string }) => [entry.name, entry]));
    assert.deepEqual(byName.oauth.auth, { flow: "client_credentials", clientId: "me", clientSecret: "[redacted]" });
    assert.deepEqual(byName.keyed.auth, { flow: "client_credentials", clientId: "me", privateKeyFile: join(folder, "key.pem") });
    assert.deepEqual(byName.local.env, { EMPTY: "[redacted]", SHORT: "[redacted]" });
    // A URL without credentials is shown as configured.
    assert.equal(byName.oauth.url, "http://127.0.0.1:9");
    assert.equal(info.name, "edges");
    assert.equal(
      info.settings.instructions,
      "Say [redacted] never. Mail me@example.org, see http://docs.example:8080/a:b@c and https://bob:[redacted]@db.example/x.",
    );
  });

  it("shows the guardrails, and no model name for a model given in code", async () => {
    const info = JSON.parse((await getJson(`${test.url}/v1/agent`)).text);
    assert.deepEqual(info.settings.guardrails, { deniedTools: [{ tools: "shell_*", reason: "no shell here" }] });
    assert.equal(info.settings.model, undefined);
  });
});

describe("GET /v1/agent of an agent that could not be built", () => {
  it("answers 200 with no tools, its MCP servers starting and /ready failed", async () => {
    const twin = defineTool({ name: "twin", description: "One of two", parameters: { type: "object", properties: {} }, execute: () => "x" });
    const test = await startTestServer({ AGENT_NAME: "broken" }, { build: { model: new ScriptedModel(["ok"]), tools: [twin, twin] } });
    try {
      const ready = await fetch(`${test.url}/ready`);
      const status = (await ready.json()) as { status: string };
      assert.deepEqual([ready.status, status.status], [503, "failed"]);
      const { status: code, text } = await getJson(`${test.url}/v1/agent`);
      assert.equal(code, 200);
      const info = JSON.parse(text);
      assert.deepEqual(info.tools, []);
      assert.equal(info.ready.status, "failed");
    } finally {
      await test.close();
    }
  });
});

describe("the studio page without AGENTLOOP_STUDIO_ASSETS", () => {
  it("is read from dist/studio of the package the server belongs to, wherever the process runs", async () => {
    const root = process.cwd();
    const saved = process.env.AGENTLOOP_STUDIO_ASSETS;
    const elsewhere = await mkdtemp(join(tmpdir(), "agentloop-studio-cwd-"));
    delete process.env.AGENTLOOP_STUDIO_ASSETS;
    process.chdir(elsewhere);
    let test: TestServer | undefined;
    try {
      test = await startTestServer({ AGENT_NAME: "paged" }, { build: { model: new ScriptedModel(["ok"]) } });
      const response = await fetch(`${test.url}/studio`);
      const page = join(root, "dist", "studio", "index.html");
      if (existsSync(page)) {
        assert.equal(response.status, 200);
        assert.equal(await response.text(), readFileSync(page, "utf8"));
      } else {
        assert.equal(response.status, 503);
        const error = ((await response.json()) as { error: { code: string; message: string } }).error;
        assert.equal(error.code, "studio_not_built");
        assert.equal(error.message, `the studio page is not built (no ${page}): run npm run build`);
      }
    } finally {
      process.chdir(root);
      if (saved !== undefined) process.env.AGENTLOOP_STUDIO_ASSETS = saved;
      await test?.close();
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});

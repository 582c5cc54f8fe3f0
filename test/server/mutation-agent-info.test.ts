// `GET /v1/agent`'s edges (src/server/routes/agent-info.ts): secrets of any length in their
// fields, a password inside free text, an empty secret, the guardrails, a model given in code, and
// an agent that could not be built; and where the studio page is read from (routes/studio.ts).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
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
        "  - name: named",
        "    url: http://tok@127.0.0.1:9/named",
        "  - name: keyed",
        "    url: http://127.0.0.1:9/keyed",
        `    auth: { clientId: me, privateKeyFile: ${join(folder, "key.pem")} }`,
        "  - name: local",
        "    command: definitely-not-a-command-xyz",
        "    env: { EMPTY: '', SHORT: t0k }",
      ].join("\n"),
    );
    test = await startTestServer(
      { MEMORY_BACKUP_URL: "postgres://:pw@127.0.0.1:9/x", MEMORY_NOTE_URL: "not a url" },
      { agentFile: file, readyTimeoutMs: 300, build: { model: new ScriptedModel(["ok"]) } },
    );
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
    // A URL without credentials, or with a user name only, is shown as configured.
    assert.equal(byName.oauth.url, "http://127.0.0.1:9");
    assert.equal(byName.named.url, "http://tok@127.0.0.1:9/named");
    // A password however short is redacted in a URL without a user name; text that is no URL is shown.
    assert.equal(info.settings.memory.MEMORY_BACKUP_URL, "postgres://:[redacted]@127.0.0.1:9/x");
    assert.equal(info.settings.memory.MEMORY_NOTE_URL, "not a url");
    assert.ok(!text.includes(":pw@"), text);
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

describe("GET /v1/agent: a model named without its URL", () => {
  it("shows the name at `?` when the model itself is given in code", async () => {
    const test = await startTestServer({ AGENT_NAME: "half", MODEL_NAME: "gpt-half" }, { build: { model: new ScriptedModel(["ok"]) } });
    try {
      assert.equal(JSON.parse((await getJson(`${test.url}/v1/agent`)).text).settings.model, "gpt-half at ?");
    } finally {
      await test.close();
    }
  });
});

describe("GET /v1/agent of an agent that could not be built", () => {
  it("answers 200 with no tools, its MCP servers starting and /ready failed", async () => {
    const twin = defineTool({ name: "twin", description: "One of two", parameters: { type: "object", properties: {} }, execute: () => "x" });
    const test = await startTestServer(
      { AGENT_NAME: "broken", MCP_SERVERS: "far", MCP_SERVER_FAR_URL: "http://127.0.0.1:9/mcp" },
      { readyTimeoutMs: 300, build: { model: new ScriptedModel(["ok"]), tools: [twin, twin] } },
    );
    try {
      const ready = await fetch(`${test.url}/ready`);
      const status = (await ready.json()) as { status: string };
      assert.deepEqual([ready.status, status.status], [503, "failed"]);
      const { status: code, text } = await getJson(`${test.url}/v1/agent`);
      assert.equal(code, 200);
      const info = JSON.parse(text);
      assert.deepEqual(info.tools, []);
      assert.equal(info.ready.status, "failed");
      assert.deepEqual(
        info.mcpServers.map((entry: { name: string; state: string }) => [entry.name, entry.state]),
        [["far", "starting"]],
      );
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
        const error = ((await response.json()) as { error: { code: string; message: string; type: string } }).error;
        assert.equal(error.code, "studio_not_built");
        assert.equal(error.type, "server_error");
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

describe("the studio's asset names and switch", () => {
  let assets: string;
  let test: TestServer;
  let off: TestServer;
  const saved = process.env.AGENTLOOP_STUDIO_ASSETS;
  before(async () => {
    assets = await mkdtemp(join(tmpdir(), "agentloop-studio-names-"));
    await mkdir(join(assets, "assets"));
    await writeFile(join(assets, "index.html"), "<!doctype html><title>page</title>");
    // Files a request must never reach: a dot file and a name outside the plain alphabet.
    await writeFile(join(assets, "assets", ".env"), "SECRET=1");
    await writeFile(join(assets, "assets", "a b.js"), "odd");
    await writeFile(join(assets, "assets", "app.js"), "app");
    process.env.AGENTLOOP_STUDIO_ASSETS = assets;
    test = await startTestServer({ AGENT_NAME: "named" }, { build: { model: new ScriptedModel(["ok"]) } });
    off = await startTestServer({ AGENT_NAME: "dark", AGENT_STUDIO: "false" }, { build: { model: new ScriptedModel(["ok"]) } });
  });
  after(async () => {
    await test.close();
    await off.close();
    if (saved === undefined) delete process.env.AGENTLOOP_STUDIO_ASSETS;
    else process.env.AGENTLOOP_STUDIO_ASSETS = saved;
    await rm(assets, { recursive: true, force: true });
  });

  it("serves only plain names below assets/: a dot file, a space or a path out answers 404", async () => {
    assert.equal(await (await fetch(`${test.url}/studio/assets/app.js`)).text(), "app");
    for (const name of [".env", "a%20b.js", "..%2Findex.html"]) {
      const response = await fetch(`${test.url}/studio/assets/${name}`);
      const error = ((await response.json()) as { error: { code: string } }).error;
      assert.deepEqual([response.status, error.code], [404, "unknown_route"], name);
    }
  });

  it("AGENT_STUDIO=false: the page is an unknown route", async () => {
    const response = await fetch(`${off.url}/studio`);
    const error = ((await response.json()) as { error: { code: string; message: string; type: string } }).error;
    assert.deepEqual([response.status, error.code, error.message], [404, "unknown_route", "no route GET /studio (the studio is off: AGENT_STUDIO=false)"]);
  });
});

// `agentloop studio`: the agent served on 127.0.0.1 with the studio page, its URL printed on stdout.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { type CliProcess, cleanEnv, runCli, spawnCli } from "../cli/helpers.js";

const started = new Set<CliProcess>();
after(() => {
  for (const cli of started) cli.child.kill("SIGKILL");
});

describe("agentloop studio", () => {
  it("prints the page's URL on 127.0.0.1 and serves the page there with its CSP", async () => {
    const cli = spawnCli(["studio", "--port", "0"], cleanEnv({ DEBUG_MOCK_RESPONSES: '["hi"]', MEMORY_TYPE: "memory" }));
    started.add(cli);
    const [url] = await cli.waitFor(/http:\/\/127\.0\.0\.1:\d+\/studio/, "stdout", 60_000);
    assert.equal(cli.stdout().trim(), url, "the one line on stdout is the URL");
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    assert.match(await page.text(), /<script type="module" src="\/studio\/assets\/studio\.js">/);
    const script = await fetch(new URL("/studio/assets/studio.js", url));
    assert.equal(script.status, 200);
    assert.match(script.headers.get("content-type") ?? "", /javascript/);
    cli.child.kill("SIGTERM");
    await cli.exited;
  });

  it("refuses an agent whose studio is off, naming the setting (exit 2)", async () => {
    const result = await runCli(["studio", "--port", "0"], cleanEnv({ DEBUG_MOCK_RESPONSES: '["hi"]', MEMORY_TYPE: "memory", AGENT_STUDIO: "false" }));
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /studio is off.*AGENT_STUDIO=false/);
    assert.equal(result.stdout, "");
  });
});

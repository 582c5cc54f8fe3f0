// `--tool-call-mode` (run, chat, serve), `--public-url` (serve) and the settings behind them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseAgentFile, settingsFrom } from "../../src/server/index.js";
import { cleanEnv, runCli } from "./helpers.js";

describe("--tool-call-mode and the public URL", () => {
  it("run --tool-call-mode fenced reads a KAOS fenced script: the block is a call, not the answer", async () => {
    const script = JSON.stringify(['Checking.\n```tool_call\n{"tool": "lookup", "arguments": {"q": "x"}}\n```', "Done after the call."]);
    const { code, stdout } = await runCli(["run", "go", "--mock", script, "--tool-call-mode", "fenced", "--json"], cleanEnv());
    assert.equal(code, 0, stdout);
    const events = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string; name?: string; delta?: string });
    // No such tool here: the call is made and answered with an error result, and the run goes on.
    assert.ok(events.some((event) => event.type === "tool-error" && event.name === "lookup"));
    assert.equal(events.filter((event) => event.type === "commentary-delta").map((event) => event.delta).join("").trim(), "Checking.");
    assert.equal(events.filter((event) => event.type === "text-delta").map((event) => event.delta).join(""), "Done after the call.");
  });

  it("rejects an unknown mode, listing fenced among the valid ones, and a public URL that is not http(s)", async () => {
    for (const command of [["run", "hi"], ["serve", "--port", "0"]]) {
      const result = await runCli([...command, "--mock", '["x"]', "--tool-call-mode", "bogus"], cleanEnv());
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /--tool-call-mode.*bogus.*auto, native, string, action, plan, fenced/s);
    }
    const url = await runCli(["serve", "--port", "0", "--mock", '["x"]', "--public-url", "ftp://nope"], cleanEnv());
    assert.equal(url.code, 2);
    assert.match(url.stderr, /--public-url: must be an http\(s\) URL, got "ftp:\/\/nope"/);
  });

  it("reads toolCallMode fenced and publicUrl from an agent file; AGENT_PUBLIC_URL wins", () => {
    const file = parseAgentFile("toolCallMode: fenced\npublicUrl: https://agents.example.com/a\n");
    assert.deepEqual([settingsFrom(file, {}).toolCallMode, settingsFrom(file, {}).publicUrl], ["fenced", "https://agents.example.com/a"]);
    assert.equal(settingsFrom(file, { AGENT_PUBLIC_URL: "https://other.example.com" }).publicUrl, "https://other.example.com");
    assert.throws(() => parseAgentFile("publicUrl: not a url\n"), /publicUrl: is not a valid URL/);
  });
});

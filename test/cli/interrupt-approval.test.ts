// Ctrl-C at an approval question (`Allow <tool>(<args>)? [y/N]`), in a real pseudo-terminal: the
// run is aborted, `chat` and `code` give their prompt back (a second Ctrl-C there leaves), `run`
// exits 130. Before, the question stayed and the next answer ended the session with
// `no approval is pending for tool call "…"`.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { cleanEnv, inTerminal } from "./helpers.js";
import { dynamicServerPath } from "../mcp/helpers.js";

const root = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-ctrl-c-")));
after(() => rmSync(root, { recursive: true, force: true }));
const agentFile = join(root, "agent.yaml");
writeFileSync(
  agentFile,
  `name: careful
mcpServers:
  dynamic:
    command: node
    args: ["${dynamicServerPath}"]
approvals:
  tools: ["add-*"]
`,
);
const addTool = JSON.stringify({ tool_calls: [{ id: "c1", name: "add-tool", arguments: { name: "greeter" } }] });
const env = cleanEnv({ MEMORY_TYPE: "memory" });
const question = /Allow add-tool\(\{"name":"greeter"\}\)\? \[y\/N\] /;

describe("Ctrl-C at an approval question (a pseudo-terminal)", { concurrency: 3 }, () => {
  it("chat: aborts the run, the prompt comes back, and a second Ctrl-C there leaves", async () => {
    const term = inTerminal(["chat", "--agent", agentFile, "--mock", JSON.stringify([addTool, "Finished."])], root, env);
    let at = await term.waitFor(/› /);
    term.type("add it\r");
    at = await term.waitFor(question, at);
    term.type("\u0003");
    at = await term.waitFor(/⏹ aborted: interrupted \(Ctrl-C\)\n/, at);
    await term.waitFor(/› /, at);
    term.type("\u0003");
    assert.equal(await term.exited, 0);
    assert.doesNotMatch(term.output(), /no approval is pending|added greeter/);
    assert.match(term.output(), /bye · continue later/);
  });

  it("code: aborts the input, the prompt comes back and takes the next line; Ctrl-C there leaves", async () => {
    const workspace = join(root, "code");
    rmSync(workspace, { recursive: true, force: true });
    writeFileSync(join(root, "code-script.json"), JSON.stringify([{ tool_calls: [{ name: "shell", arguments: { command: "echo hi" } }] }, "Hello again."]));
    mkdirSync(workspace);
    const term = inTerminal(["code", "--mock", `@${join(root, "code-script.json")}`, "--workspace", workspace], root, env);
    let at = await term.waitFor(/code› /);
    term.type("say hi\r");
    at = await term.waitFor(/Allow shell\(\{"command":"echo hi"\}\)\? \[y\/N\] /, at);
    term.type("\u0003");
    at = await term.waitFor(/⏹ aborted: interrupted \(Ctrl-C\)\n/, at);
    at = await term.waitFor(/code› /, at);
    term.type("and now?\r");
    at = await term.waitFor(/Hello again\.\n[\s\S]*code› /, at);
    term.type("\u0003");
    assert.equal(await term.exited, 0);
    assert.doesNotMatch(term.output(), /no approval is pending|✓ shell/);
  });

  it("run --approve ask: aborts the run and exits 130", async () => {
    const term = inTerminal(["run", "add it", "--agent", agentFile, "--mock", JSON.stringify([addTool, "Finished."])], root, env);
    const at = await term.waitFor(question);
    term.type("\u0003");
    await term.waitFor(/agentloop: run ended ABORTED: interrupted \(Ctrl-C\)\n/, at);
    assert.equal(await term.exited, 130);
    assert.doesNotMatch(term.output(), /no approval is pending|added greeter|Finished\./);
  });
});

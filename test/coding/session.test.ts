// Session setup (profiles, environment block, AGENTS.md), sub-agents and approvals, on real files,
// a real git repository and real commands.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type CodingSession, createCodingAgent, profileForModel, Workspace } from "../../src/coding/index.js";
import { defineTool, type LoopEvent, ScriptedModel, type Tool } from "../../src/index.js";
import { approvalRequestOf } from "../../src/loop/approvals.js";
import { calls, eventsOf, ofType } from "../loop/helpers.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-coding-session-");
const git = (cwd: string, ...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, stdio: "pipe" }).toString();
const workspaceAt = (root: string) => new Workspace({ root, inheritEnv: { PATH: process.env.PATH } });
/** tool-end events in the order the calls were made (calls of one wave may end in any order). */
function inCallOrder(events: LoopEvent[]) {
  const order = ofType(events, "tool-start").map((start) => start.toolCallId);
  return ofType(events, "tool-end").sort((a, b) => order.indexOf(a.toolCallId) - order.indexOf(b.toolCallId));
}
const toolNames = (session: CodingSession) => (session.agent.config.tools ?? []).map((tool) => (tool as Tool).name).sort();

// Each test has its own folder: they run side by side.
describe("coding sessions", { concurrency: 4 }, () => {
describe("profiles", () => {
  it("pick apply_patch for OpenAI models and edit_file for the others, and can be overridden", async () => {
    assert.equal(profileForModel("openai:gpt-4.1").id, "openai");
    assert.equal(profileForModel("openai-responses:gpt-5").id, "openai");
    assert.equal(profileForModel("gpt-5-codex").id, "openai");
    assert.equal(profileForModel("o3").id, "openai");
    assert.equal(profileForModel("anthropic:claude-sonnet-4-5").id, "anthropic");
    assert.equal(profileForModel("llama3.1").id, "anthropic");
    assert.equal(profileForModel("google:gemini-2.5-flash").id, "gemini");
    assert.equal(profileForModel("gemini-3-pro-preview").id, "gemini");
    const root = freshRoot();
    const model = new ScriptedModel(["ok"]);
    const openai = await createCodingAgent({ model, modelName: "openai:gpt-4.1", workspace: root });
    assert.deepEqual(toolNames(openai), ["apply_patch", "close_agent", "glob", "grep", "read_file", "send_input", "shell", "spawn_agent", "wait", "write_file"]);
    assert.match(openai.systemPrompt, /apply_patch/);
    const claude = await createCodingAgent({ model, modelName: "anthropic:claude-sonnet-4-5", workspace: root, subagents: false });
    assert.deepEqual(toolNames(claude), ["edit_file", "glob", "grep", "read_file", "shell", "write_file"]);
    assert.match(claude.systemPrompt, /old_string must match/);
    // Overridden: the profile by name, and a tool of the same name replaced by the user's.
    const mine = defineTool({ name: "shell", description: "no shell here", parameters: { type: "object" }, execute: () => "refused" });
    const overridden = await createCodingAgent({ model, modelName: "anthropic:claude-sonnet-4-5", workspace: root, profile: "openai", tools: [mine], subagents: false });
    assert.equal(overridden.profile.id, "openai");
    assert.equal(overridden.agent.config.tools?.find((tool) => (tool as Tool).name === "shell"), mine);
    const gemini = await createCodingAgent({ model, modelName: "google:gemini-2.5-flash", workspace: freshRoot({ "GEMINI.md": "Gemini: use tabs.\n" }), subagents: false });
    assert.ok(gemini.systemPrompt.includes("Gemini: use tabs."), "the gemini profile reads GEMINI.md");
    assert.equal(gemini.profile.id, "gemini");
    assert.deepEqual(toolNames(gemini), ["edit_file", "glob", "grep", "read_file", "shell", "write_file"]);
    assert.match(gemini.systemPrompt, /in parallel, in one turn/);
    await assert.rejects(createCodingAgent({ model, workspace: root, profile: "mistral" }), /unknown profile "mistral"; use openai or anthropic or gemini/);
  });
});

describe("the system prompt", () => {
  it("has the environment block (folder, git branch and short status, platform, date, model) and the project's instruction files, outer first", async () => {
    const repo = freshRoot({ "AGENTS.md": "Run npm test before you finish.\n", "CLAUDE.md": "Claude: be terse.\n", "GEMINI.md": "never read\n", "app/AGENTS.md": "In app/, use tabs.\n", "app/a.js": "1\n", "b.txt": "x\n" });
    git(repo, "init", "-q", "-b", "feature/x");
    git(repo, "add", ".");
    git(repo, "commit", "-qm", "first commit");
    writeFileSync(join(repo, "b.txt"), "changed\n");
    writeFileSync(join(repo, "new.txt"), "untracked\n");
    const model = new ScriptedModel(["ok"]);
    const session = await createCodingAgent({ model, modelName: "anthropic:claude-sonnet-4-5", workspace: join(repo, "app"), instructions: "Answer in French.", now: new Date("2026-11-24T12:00:00Z") });
    const prompt = session.systemPrompt;
    for (const line of [
      `Working directory: ${join(repo, "app")}`,
      "Is git repository: true",
      "Git branch: feature/x",
      "Git status: 1 changed, 1 untracked",
      "first commit",
      `Platform: ${process.platform}`,
      "Today's date: 2026-11-24",
      "Model: anthropic:claude-sonnet-4-5",
    ]) {
      assert.ok(prompt.includes(line), `missing ${line}`);
    }
    const order = ["## AGENTS.md", "Run npm test", "## CLAUDE.md", "## app/AGENTS.md", "In app/, use tabs.", "<user_instructions>\nAnswer in French."].map((text) => prompt.indexOf(text));
    assert.ok(order.every((at, index) => at > 0 && (index === 0 || at > order[index - 1])), `order ${order}`);
    assert.ok(!prompt.includes("never read"), "GEMINI.md is not for this profile");
    assert.deepEqual(session.project.files, ["AGENTS.md", "CLAUDE.md", "app/AGENTS.md"]);
    // The OpenAI profile reads AGENTS.md but not CLAUDE.md.
    const openai = await createCodingAgent({ model, modelName: "openai:gpt-4.1", workspace: repo });
    assert.ok(openai.systemPrompt.includes("Run npm test") && !openai.systemPrompt.includes("Claude: be terse"));
    // And it is what the model gets.
    await session.agent.run("hi");
    const system = model.requests.at(-1)?.messages[0];
    assert.equal(system?.role, "system");
    assert.equal(system?.content, prompt);
  });

  it("outside git says so, and keeps AGENTS.md within the 32 KB budget, saying what was cut", async () => {
    const big = `${"rule\n".repeat(8000)}`; // 40,000 bytes
    const root = freshRoot({ "AGENTS.md": big, "CLAUDE.md": "small\n" });
    const session = await createCodingAgent({ model: new ScriptedModel([]), workspace: root, subagents: false });
    assert.match(session.systemPrompt, /Is git repository: false/);
    assert.ok(!session.systemPrompt.includes("Git branch"));
    assert.deepEqual(session.project.cut, [`AGENTS.md: ${32 * 1024} of ${"## AGENTS.md\n\n".length + big.length - 1} bytes kept`, "CLAUDE.md: left out (19 bytes)"]);
    assert.ok(session.systemPrompt.includes("[Project instructions truncated at 32KB: AGENTS.md: 32768 of 40013 bytes kept; CLAUDE.md: left out (19 bytes)]"));
    assert.ok(Buffer.byteLength(session.project.text) < 32 * 1024 + 200);
  });
});

describe("sub-agents", () => {
  it("work in Workspace.scoped folders: a folder inside is a workspace of its own; a file or a folder outside is refused", async () => {
    const root = freshRoot({ "pkg/a.txt": "a\n" });
    const workspace = workspaceAt(root);
    const scoped = await workspace.scoped("pkg");
    assert.equal(scoped.root, join(root, "pkg"));
    await assert.rejects(scoped.resolvePath("../pkg/a.txt").then(() => scoped.resolvePath("../other")), /outside the workspace/);
    await assert.rejects(workspace.scoped("pkg/a.txt"), /pkg\/a\.txt is not a folder of the workspace/);
    await assert.rejects(workspace.scoped(".."), /outside the workspace/);
  });

  it("spawn_agent runs a child in the background on the same files (scoped to working_dir); wait returns its answer and forwards its events; send_input continues it with its history", async () => {
    const root = freshRoot({ "pkg/readme.txt": "hello from pkg\n" });
    const child = new ScriptedModel(
      [
        calls(["read_file", { file_path: "readme.txt" }]),
        calls(["write_file", { file_path: "summary.txt", content: "pkg says hello\n" }]),
        "Wrote summary.txt.",
        "Yes: summary.txt is in pkg.",
      ],
      { continueAcrossRuns: true },
    );
    const parent = new ScriptedModel([
      calls(["spawn_agent", { task: "Summarize readme.txt into summary.txt", working_dir: "pkg" }]),
      calls(["wait", { agent_id: "agent_1" }]),
      calls(["send_input", { agent_id: "agent_1", message: "Is it there?" }]),
      calls(["wait", { agent_id: "agent_1" }]),
      calls(["close_agent", { agent_id: "agent_1" }], ["wait", { agent_id: "agent_9" }]),
      "The sub-agent wrote pkg/summary.txt.",
    ]);
    const session = await createCodingAgent({ model: parent, workspace: workspaceAt(root), subagents: { model: child } });
    const run = session.agent.run("Summarize pkg");
    const events = await eventsOf(run);
    assert.equal((await run).state, "COMPLETED");
    assert.equal(readFileSync(join(root, "pkg/summary.txt"), "utf8"), "pkg says hello\n");
    const ends = inCallOrder(events);
    assert.match(ends[0].output, /^Spawned agent_1 in .*pkg: running\./);
    assert.equal(ends[1].output, "agent_1: completed (COMPLETED, 3 model calls)\nsuccess: true\nturns used: 3\n\nWrote summary.txt.");
    assert.deepEqual(ends[1].structured, { agent_id: "agent_1", success: true, turns_used: 3, state: "COMPLETED" });
    assert.match(ends[2].output, /^Sent to agent_1: it is running again/);
    assert.match(ends[3].output, /success: true\nturns used: 4\n\nYes: summary.txt is in pkg\.$/);
    assert.match(ends[4].output, /^Closed agent_1 \(it was completed; its run ended COMPLETED\)/);
    assert.equal(ends[5].isError, true);
    assert.match(ends[5].output, /^wait: No sub-agent "agent_9"\. Known: agent_1\./);
    // The child's events reached the parent's stream, nested under its id.
    const nested = ofType(events, "nested").filter((event) => event.agent === "agent_1");
    assert.deepEqual(
      nested.filter((event) => event.event.type === "tool-end").map((event) => (event.event as Extract<LoopEvent, { type: "tool-end" }>).name),
      ["read_file", "write_file"],
    );
    // Its own history: the second run saw the first one's messages, and none of the parent's.
    const last = child.requests.at(-1)!;
    const texts = last.messages.map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content)));
    assert.ok(texts.some((text) => text.includes("Summarize readme.txt")));
    assert.ok(texts.some((text) => text === "Is it there?"));
    assert.ok(!texts.some((text) => text.includes("Summarize pkg")));
  });

  it("are depth-limited: by default a sub-agent gets no spawn tools; with maxDepth 2 it does, and its child does not", async () => {
    const root = freshRoot();
    const child = new ScriptedModel(["done"]);
    const session = await createCodingAgent({ model: new ScriptedModel([calls(["spawn_agent", { task: "t" }]), calls(["wait", { agent_id: "agent_1" }]), "ok"]), workspace: root, subagents: { model: child } });
    await session.agent.run("go");
    assert.ok(!(child.requests[0].tools ?? []).some((tool) => tool.name === "spawn_agent"));
    const deeper = new ScriptedModel(["done"]);
    const two = await createCodingAgent({ model: new ScriptedModel([calls(["spawn_agent", { task: "t" }]), calls(["wait", { agent_id: "agent_1" }]), "ok"]), workspace: root, subagents: { model: deeper, maxDepth: 2 } });
    await two.agent.run("go");
    assert.ok((deeper.requests[0].tools ?? []).some((tool) => tool.name === "spawn_agent"));
    assert.equal(two.subagents?.tools(2).length, 0);
  });

  it("close_agent aborts a running child (its command is killed), and a bad working_dir is refused", async () => {
    const root = freshRoot();
    const child = new ScriptedModel([calls(["shell", { command: "sleep 30", timeout_ms: 60_000 }]), "never"]);
    const parent = new ScriptedModel([
      calls(["spawn_agent", { task: "sleep", working_dir: "../elsewhere" }]),
      calls(["spawn_agent", { task: "sleep" }]),
      calls(["close_agent", { agent_id: "agent_1" }]),
      calls(["wait", { agent_id: "agent_1" }]),
      "closed",
    ]);
    const session = await createCodingAgent({ model: parent, workspace: workspaceAt(root), subagents: { model: child } });
    const started = performance.now();
    const run = session.agent.run("go");
    const ends = ofType(await eventsOf(run), "tool-end");
    assert.ok(performance.now() - started < 20_000);
    assert.equal(ends[0].isError, true);
    assert.match(ends[0].output, /spawn_agent: working_dir: path "\.\.\/elsewhere" is outside the workspace/);
    assert.match(ends[2].output, /^Closed agent_1 \(it was running; its run ended ABORTED\)/);
    assert.equal(ends[3].isError, true);
    assert.match(ends[3].output, /^agent_1: closed \(ABORTED/);
    assert.deepEqual(session.subagents?.list(), [{ id: "agent_1", status: "closed" }]);
  });
});

describe("approvals", () => {
  it("with approvals on, shell, write_file and edit_file wait for a person; read-only tools never ask", async () => {
    const root = freshRoot({ "a.txt": "alpha\n" });
    const model = new ScriptedModel([
      calls(["read_file", { file_path: "a.txt" }], ["glob", { pattern: "*" }], ["grep", { pattern: "alpha" }]),
      calls(["write_file", { file_path: "b.txt", content: "b\n" }], ["edit_file", { file_path: "a.txt", old_string: "alpha", new_string: "beta" }], ["shell", { command: "echo hi" }]),
      "done",
    ]);
    const session = await createCodingAgent({ model, workspace: workspaceAt(root), approvals: true, subagents: false });
    const run = session.agent.run("go");
    const asked: string[] = [];
    for await (const event of run) {
      if (event.type === "approval-request") {
        asked.push(event.name);
        if (event.name === "shell") run.reject(event.toolCallId, "no commands");
        else run.approve(event.toolCallId);
      }
    }
    assert.equal((await run).state, "COMPLETED");
    assert.deepEqual(asked.sort(), ["edit_file", "shell", "write_file"]);
    assert.equal(readFileSync(join(root, "a.txt"), "utf8"), "beta\n");
    assert.equal(existsSync(join(root, "b.txt")), true);
  });

  it("a sub-agent's writing tools ask too: its approval request reaches the parent's stream while the parent waits, and the parent's run answers it", async () => {
    const root = freshRoot();
    const child = new ScriptedModel([calls(["shell", { command: "echo from-child > out.txt" }]), "wrote out.txt"]);
    const parent = new ScriptedModel([calls(["spawn_agent", { task: "write out.txt" }]), calls(["wait", { agent_id: "agent_1" }]), "done"]);
    const session = await createCodingAgent({ model: parent, workspace: workspaceAt(root), approvals: true, subagents: { model: child } });
    const run = session.agent.run("go");
    const asked: string[] = [];
    for await (const event of run) {
      const request = approvalRequestOf(event);
      if (request && run.pendingApprovals.includes(request.toolCallId)) {
        asked.push(`${event.type === "nested" ? event.agent : "parent"}:${request.name}`);
        run.approve(request.toolCallId);
      }
    }
    assert.equal((await run).state, "COMPLETED");
    assert.deepEqual(asked, ["agent_1:shell"]);
    assert.equal(readFileSync(join(root, "out.txt"), "utf8"), "from-child\n");
  });
});
});

// A coding session's setup on the inputs session.test.ts leaves out: model names at the edges of each
// profile, git's status words (clean, only changed, only untracked, a detached HEAD, no commits), the
// environment block without git or model, the instruction files' budget at its edges (the 200-byte
// rule, a cut inside a multi-byte character, an empty file), a git root that does not hold the
// workspace, and the system prompt's optional sections.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { release } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  ANTHROPIC_PROFILE,
  codingSystemPrompt,
  environmentBlock,
  environmentInfo,
  GEMINI_PROFILE,
  gitContext,
  OPENAI_PROFILE,
  profileForModel,
  projectInstructions,
  Workspace,
} from "../../src/coding/index.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-session-mutation-");
const git = (cwd: string, ...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, stdio: "pipe" }).toString();

describe("session setup, mutation cases", () => {
  it("profileForModel at the edges of each family", () => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, "anthropic"],
      ["", "anthropic"],
      ["OpenAI:Some-Model", "openai"],
      ["openai-responses:anything", "openai"],
      ["ollama:gpt-oss", "openai"],
      ["chatgpt-4o-latest", "openai"],
      ["codex-mini", "openai"],
      ["o4-mini", "openai"],
      ["o", "anthropic"],
      ["omni", "anthropic"],
      ["my-gpt-4", "anthropic"],
      ["gpt4", "anthropic"],
      ["Google:anything", "gemini"],
      ["openrouter:gemini-flash", "gemini"],
      ["GEMINI-2.5-PRO", "gemini"],
      ["vertex:claude-gemini", "anthropic"],
    ];
    for (const [model, id] of cases) assert.equal(profileForModel(model).id, id, String(model));
  });

  it("git's status in words: clean, only changed, only untracked; a detached HEAD; no commits; outside git nothing", async () => {
    const repo = freshRoot({ "a.txt": "a\n" });
    git(repo, "init", "-q", "-b", "main");
    let context = await gitContext(repo);
    assert.deepEqual({ ...context, root: undefined }, { root: undefined, branch: "main", status: "1 untracked", recentCommits: [] });
    git(repo, "add", ".");
    git(repo, "commit", "-qm", "one");
    context = await gitContext(repo);
    assert.equal(context?.root, repo);
    assert.equal(context?.status, "clean");
    assert.match(context?.recentCommits[0] ?? "", /^[0-9a-f]{7,} one$/);
    writeFileSync(join(repo, "a.txt"), "changed\n");
    assert.equal((await gitContext(repo))?.status, "1 changed");
    git(repo, "commit", "-qam", "two");
    git(repo, "checkout", "-q", "--detach", "HEAD~1");
    context = await gitContext(repo);
    assert.equal(context?.branch, "(detached HEAD)");
    assert.equal(context?.recentCommits.length, 1);
    assert.equal(await gitContext(freshRoot()), undefined);
  });

  it("the environment block without git or model, and with git but no commits", async () => {
    const root = freshRoot();
    const info = await environmentInfo(new Workspace({ root }), { now: new Date("2026-01-02T23:59:00Z") });
    const os = process.platform === "linux" ? "Linux" : process.platform === "darwin" ? "Darwin" : process.platform;
    assert.deepEqual(info, { workingDirectory: root, platform: process.platform, osVersion: `${os} ${release()}`, date: "2026-01-02", model: undefined, git: undefined });
    assert.equal(
      environmentBlock(info),
      `<environment>\nWorking directory: ${root}\nIs git repository: false\nPlatform: ${process.platform}\nOS version: ${os} ${release()}\nToday's date: 2026-01-02\n</environment>`,
    );
    const withGit = environmentBlock({ ...info, model: "m", git: { root, branch: "b", status: "clean", recentCommits: [] } });
    assert.equal(withGit, `<environment>\nWorking directory: ${root}\nIs git repository: true\nGit branch: b\nGit status: clean\nPlatform: ${process.platform}\nOS version: ${os} ${release()}\nToday's date: 2026-01-02\nModel: m\n</environment>`);
    assert.match(environmentBlock({ ...info, git: { root, branch: "b", status: "clean", recentCommits: ["abc one", "def two"] } }), /\nRecent commits:\n {2}abc one\n {2}def two\nPlatform/);
  });

  it("instruction files: an empty one is skipped; a git root that does not hold the workspace is ignored; nested folders each read", async () => {
    const root = freshRoot({ "AGENTS.md": "  \n", "CLAUDE.md": "top\n", "a/b/AGENTS.md": "deep\n" });
    const workspace = new Workspace({ root: join(root, "a/b") });
    const outside = await projectInstructions(workspace, ANTHROPIC_PROFILE, { gitRoot: freshRoot() });
    assert.deepEqual(outside.files, ["AGENTS.md"]);
    assert.equal(outside.text, "## AGENTS.md\n\ndeep");
    const inside = await projectInstructions(workspace, ANTHROPIC_PROFILE, { gitRoot: root });
    assert.deepEqual(inside.files, ["CLAUDE.md", "a/b/AGENTS.md"]);
    assert.equal(inside.text, "## CLAUDE.md\n\ntop\n\n## a/b/AGENTS.md\n\ndeep");
    assert.deepEqual(inside.cut, []);
    assert.deepEqual((await projectInstructions(workspace, OPENAI_PROFILE, { gitRoot: root })).files, ["a/b/AGENTS.md"]);
  });

  it("the budget: a file that fits exactly is whole; more than 200 bytes left are filled, cut at a character; 200 or fewer leave it out", async () => {
    const section = (name: string, text: string) => Buffer.byteLength(`## ${name}\n\n${text}`);
    const first = "a".repeat(500);
    const root = freshRoot({ "AGENTS.md": `${first}\n`, "CLAUDE.md": `${"é".repeat(300)}\n` });
    const workspace = new Workspace({ root });
    const exact = await projectInstructions(workspace, ANTHROPIC_PROFILE, { budget: section("AGENTS.md", first) });
    assert.deepEqual(exact.cut, ["CLAUDE.md: left out (614 bytes)"]);
    assert.equal(exact.text, `## AGENTS.md\n\n${first}\n\n[Project instructions truncated at 1KB: CLAUDE.md: left out (614 bytes)]`);
    // 201 bytes left: CLAUDE.md is cut; 201 - 14 header bytes = 187, an odd number: the half "é" goes.
    const cut = await projectInstructions(workspace, ANTHROPIC_PROFILE, { budget: section("AGENTS.md", first) + 201 });
    assert.deepEqual(cut.cut, ["CLAUDE.md: 200 of 614 bytes kept"]);
    assert.ok(cut.text.includes(`## CLAUDE.md\n\n${"é".repeat(93)}\n\n[Project instructions truncated at 1KB`));
    const none = await projectInstructions(workspace, ANTHROPIC_PROFILE, { budget: section("AGENTS.md", first) + 200 });
    assert.deepEqual(none.cut, ["CLAUDE.md: left out (614 bytes)"]);
    assert.equal((await projectInstructions(workspace, ANTHROPIC_PROFILE, { budget: 4096 })).cut.length, 0);
  });

  it("the system prompt leaves out empty project instructions and blank user instructions, and trims them", async () => {
    const environment = { workingDirectory: "/w", platform: "linux", osVersion: "Linux 6", date: "2026-01-01" };
    const bare = codingSystemPrompt({ profile: ANTHROPIC_PROFILE, environment, project: { text: "", files: [], cut: [] }, instructions: "  \n " });
    assert.equal(bare, `${ANTHROPIC_PROFILE.basePrompt}\n\n${environmentBlock(environment)}`);
    const full = codingSystemPrompt({ profile: ANTHROPIC_PROFILE, environment, project: { text: "## AGENTS.md\n\nx", files: ["AGENTS.md"], cut: [] }, instructions: "  be brief \n" });
    assert.ok(full.endsWith("\n\n<project_instructions>\n## AGENTS.md\n\nx\n</project_instructions>\n\n<user_instructions>\nbe brief\n</user_instructions>"));
  });
  it("every profile's prompt ends with the common practice; the OpenAI profile reads .codex/instructions.md", async () => {
    for (const profile of [OPENAI_PROFILE, ANTHROPIC_PROFILE, GEMINI_PROFILE]) {
      assert.match(profile.basePrompt, /\n\nWork in small, verified steps: [^\n]*A command runs with a 10 s timeout unless you give timeout_ms \(at most 600000\)\.[^\n]*checked it\.$/, profile.id);
    }
    const root = freshRoot({ ".codex/instructions.md": "codex rules\n", "CLAUDE.md": "claude\n" });
    const found = await projectInstructions(new Workspace({ root }), OPENAI_PROFILE);
    assert.deepEqual(found.files, [".codex/instructions.md"]);
    assert.equal(found.text, "## .codex/instructions.md\n\ncodex rules");
  });

  it("a cut keeps a U+FFFD the file holds, dropping only a half character at the end; a prompt without project instructions", async () => {
    const root = freshRoot({ "AGENTS.md": `\uFFFD${"é".repeat(300)}\n` });
    // Header 14 bytes + 3 bytes of U+FFFD, then 2-byte "é"s: a budget of 14 + 3 + 200 + 1 cuts one in half.
    const cut = await projectInstructions(new Workspace({ root }), ANTHROPIC_PROFILE, { budget: 218 });
    assert.ok(cut.text.startsWith(`## AGENTS.md\n\n\uFFFD${"é".repeat(100)}\n\n[Project instructions truncated`), cut.text.slice(0, 40));
    assert.deepEqual(cut.cut, ["AGENTS.md: 217 of 617 bytes kept"]);
    const environment = { workingDirectory: "/w", platform: "linux", osVersion: "Linux 6", date: "2026-01-01" };
    assert.equal(codingSystemPrompt({ profile: GEMINI_PROFILE, environment }), `${GEMINI_PROFILE.basePrompt}\n\n${environmentBlock(environment)}`);
  });
});

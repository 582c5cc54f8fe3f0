// createCodingAgent on the inputs session.test.ts leaves out: no model, the workspace given as a
// folder or not at all, a profile object of one's own, an unknown profile's full message, approvals as
// a list or true or from the agent settings, the turn limit and name defaults, and what a sub-agent
// gets: its own prompt (its id, the user's instructions first, its folder), the extra tools.
import assert from "node:assert/strict";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ANTHROPIC_PROFILE, type CodingProfile, createCodingAgent, WRITING_TOOLS, Workspace } from "../../src/coding/index.js";
import { defineTool, ScriptedModel, type Tool } from "../../src/index.js";
import { calls } from "../loop/helpers.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-agent-mutation-");

describe("createCodingAgent, mutation cases", () => {
  it("refuses a missing model, takes the workspace as a folder or the current one, and names every profile when one is unknown", async () => {
    await assert.rejects(createCodingAgent(undefined as never), { name: "TypeError", message: "createCodingAgent: model must be a Model" });
    await assert.rejects(createCodingAgent({ model: {} as never }), { name: "TypeError", message: "createCodingAgent: model must be a Model" });
    await assert.rejects(createCodingAgent({} as never), { name: "TypeError", message: "createCodingAgent: model must be a Model" });
    const model = new ScriptedModel([]);
    const root = freshRoot();
    assert.equal((await createCodingAgent({ model, workspace: root, subagents: false })).workspace.root, root);
    assert.equal((await createCodingAgent({ model, subagents: false })).workspace.root, realpathSync(process.cwd()));
    await assert.rejects(createCodingAgent({ model, workspace: root, profile: "x" }), {
      name: "TypeError",
      message: 'createCodingAgent: unknown profile "x"; use openai or anthropic or gemini, or pass a CodingProfile',
    });
    const mine: CodingProfile = { id: "mine", tools: () => [], basePrompt: "MY BASE PROMPT", instructionFiles: [] };
    const session = await createCodingAgent({ model, workspace: root, profile: mine, subagents: false });
    assert.equal(session.profile, mine);
    assert.ok(session.systemPrompt.startsWith("MY BASE PROMPT\n\n<environment>"));
    assert.deepEqual(session.agent.config.tools, []);
    // Without sub-agents there is nothing to stop: close() still resolves.
    assert.equal(session.subagents, undefined);
    await session.close();
  });

  it("approvals: true asks for the writing tools, a list for those, none by default (or the agent settings' own)", async () => {
    const model = new ScriptedModel([]);
    const root = freshRoot();
    const ask = async (options: Record<string, unknown>) => (await createCodingAgent({ model, workspace: root, subagents: false, ...options })).agent.config.needsApproval;
    assert.deepEqual(await ask({ approvals: true }), ["shell", "write_file", "edit_file", "apply_patch"]);
    assert.deepEqual(WRITING_TOOLS, ["shell", "write_file", "edit_file", "apply_patch"]);
    assert.deepEqual(await ask({ approvals: ["shell"] }), ["shell"]);
    assert.equal(await ask({}), undefined);
    assert.equal(await ask({ approvals: false }), undefined);
    assert.deepEqual(await ask({ agent: { needsApproval: ["glob"] } }), ["glob"]);
  });

  it("the turn limit is 100 unless given, the agent is named coder unless the settings name it", async () => {
    const model = new ScriptedModel([]);
    const root = freshRoot();
    const plain = await createCodingAgent({ model, workspace: root, subagents: false });
    assert.equal(plain.agent.config.maxTurns, 100);
    assert.equal(plain.agent.config.name, "coder");
    const given = await createCodingAgent({ model, workspace: root, subagents: false, maxTurns: 7, agent: { name: "mine" } });
    assert.equal(given.agent.config.maxTurns, 7);
    assert.equal(given.agent.config.name, "mine");
  });

  it("a sub-agent gets its own prompt (its id after the user's instructions, its folder) and the extra tools", async () => {
    const root = freshRoot({ "pkg/x.txt": "x\n" });
    const extra = defineTool({ name: "extra_tool", description: "an extra tool", parameters: { type: "object" }, execute: () => "extra" });
    const child = new ScriptedModel(["done"]);
    const session = await createCodingAgent({
      model: new ScriptedModel([calls(["spawn_agent", { task: "t", working_dir: "pkg", max_turns: 3 }]), calls(["wait", { agent_id: "agent_1" }]), "ok"]),
      workspace: new Workspace({ root }),
      instructions: "Be brief.",
      tools: [extra],
      subagents: { model: child },
    });
    await session.agent.run("go");
    const request = child.requests[0];
    const system = request.messages[0].content as string;
    assert.ok(system.includes(`Working directory: ${join(root, "pkg")}\n`), system.slice(-600));
    assert.ok(system.endsWith("<user_instructions>\nBe brief.\n\nYou are agent_1, a sub-agent: another agent gave you this task. Do it, then answer with what you did and found; your answer is returned to that agent.\n</user_instructions>"));
    assert.ok((request.tools ?? []).some((tool) => tool.name === "extra_tool"));
    assert.ok(session.systemPrompt.includes(`Working directory: ${root}\n`));
    // Without instructions of the user's, the sub-agent's start with its id.
    const bare = new ScriptedModel(["done"]);
    const second = await createCodingAgent({ model: new ScriptedModel([calls(["spawn_agent", { task: "t" }]), calls(["wait", { agent_id: "agent_1" }]), "ok"]), workspace: root, subagents: { model: bare } });
    await second.agent.run("go");
    assert.ok((bare.requests[0].messages[0].content as string).includes("<user_instructions>\nYou are agent_1, a sub-agent"));
    assert.deepEqual(ANTHROPIC_PROFILE.tools(new Workspace({ root })).map((tool: Tool) => tool.name), ["read_file", "write_file", "edit_file", "shell", "grep", "glob"]);
  });
});

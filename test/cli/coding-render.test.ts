// The coding view of `agentloop code`: apply_patch's diffs per file, shell output line by line
// (a line split across chunks is joined), long diffs cut — from real tool runs through the loop.
import assert from "node:assert/strict";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { CodingRenderer } from "../../src/cli/coding-render.js";
import { applyPatchTool, shellTool, Workspace } from "../../src/coding/index.js";
import { Agent, ScriptedModel } from "../../src/index.js";
import { calls } from "../loop/helpers.js";
import { captured } from "./helpers.js";

const root = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-coding-render-")));
after(() => rmSync(root, { recursive: true, force: true }));

it("shows each file of a patch with its diff, joins shell output split across chunks, and cuts a diff past 80 lines", async () => {
  writeFileSync(join(root, "a.txt"), "one\ntwo\n");
  writeFileSync(join(root, "gone.txt"), "bye\n");
  const big = Array.from({ length: 1000 }, (_, index) => `+line ${index}`).join("\n");
  const patch = ["*** Begin Patch", "*** Update File: a.txt", "-two", "+TWO", "*** Delete File: gone.txt", "*** Add File: big.txt", big, "*** End Patch"].join("\n");
  const workspace = new Workspace({ root, inheritEnv: { PATH: process.env.PATH } });
  const agent = new Agent({
    model: new ScriptedModel([calls(["apply_patch", { patch }]), calls(["shell", { command: "printf 'par'; sleep 0.2; printf 'tial\\nnext\\nlast'" }]), "done"]),
    tools: [applyPatchTool(workspace), shellTool(workspace)],
  });
  const out = captured();
  const renderer = new CodingRenderer(out);
  for await (const event of agent.run("go")) renderer.onEvent(event);
  const text = out.text();
  assert.match(text, /✓ apply_patch .*Applied the patch: M a\.txt D gone\.txt A big\.txt\n {4}a\.txt\n {4}@@ -1,2 \+1,2 @@\n {5}one\n {4}-two\n {4}\+TWO\n {4}gone\.txt\n {4}@@ -1,1 \+1,0 @@\n {4}-bye\n {4}big\.txt\n/);
  // The tool keeps 400 diff lines of the 1001 (header + 1000) in its structured output; the view shows 80 and counts the rest.
  assert.match(text, / {4}\+line 78\n {4}… 921 more diff lines\n/);
  assert.ok(!text.includes("+line 79"));
  assert.match(text, / {4}│ partial\n {4}│ next\n {4}│ last\n {2}✓ shell/);
});

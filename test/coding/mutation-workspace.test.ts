// The Workspace's refusals and settings as its user sees them, on the inputs the mutation run
// (npm run mutation -- src/coding/workspace.ts) showed untested: a bad root, a bad path (empty, not
// a string, with a NUL), a path through a file, a scoped folder that does not exist, the
// environment given to the workspace reaching its commands, the error's name, the root's display.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { PathOutsideWorkspaceError, Workspace } from "../../src/coding/index.js";

const root = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-workspace-mutation-")));
after(() => rmSync(root, { recursive: true, force: true }));
writeFileSync(join(root, "file.txt"), "a file\n");
mkdirSync(join(root, "sub"));

describe("Workspace", () => {
  it("a root that is missing, empty or not a string is refused with a TypeError naming the root", () => {
    for (const options of [undefined, {}, { root: "" }, { root: 42 }]) {
      assert.throws(() => new Workspace(options as never), { name: "TypeError", message: "Workspace: root must be a folder path" }, JSON.stringify(options));
    }
  });

  it("a root that is a file is refused at once, naming it (not spawn ENOTDIR at the first command)", () => {
    assert.throws(() => new Workspace({ root: join(root, "file.txt") }), { message: `Workspace: the root ${join(root, "file.txt")} is a file, not a folder` });
  });

  it("a path that is empty, not a string, or holds a NUL is refused with a TypeError saying so", async () => {
    const workspace = new Workspace({ root });
    await assert.rejects(workspace.resolvePath(""), { name: "TypeError", message: "a file path must be a non-empty string" });
    await assert.rejects(workspace.resolvePath(7 as never), { name: "TypeError", message: "a file path must be a non-empty string" });
    await assert.rejects(workspace.resolvePath("a\0b"), { name: "TypeError", message: 'file path "a\\u0000b" contains a NUL character' });
  });

  it("a path through a file is an error (ENOTDIR), not a path", async () => {
    await assert.rejects(new Workspace({ root }).resolvePath("file.txt/below"), { code: "ENOTDIR" });
  });

  it("a path leaving the root is a PathOutsideWorkspaceError, so named", async () => {
    const error = await new Workspace({ root }).resolvePath("../elsewhere").catch((caught: unknown) => caught);
    assert.ok(error instanceof PathOutsideWorkspaceError);
    assert.equal(error.name, "PathOutsideWorkspaceError");
  });

  it("scoping to a folder that does not exist, or to a file, says which and where", async () => {
    const workspace = new Workspace({ root });
    await assert.rejects(workspace.scoped("missing"), { message: `missing is not a folder of the workspace ${root}` });
    await assert.rejects(workspace.scoped("file.txt"), { message: `file.txt is not a folder of the workspace ${root}` });
    assert.equal((await workspace.scoped("sub")).root, join(root, "sub"));
  });

  it("the root is displayed as '.', a path inside it relative, a path outside as it is", () => {
    const workspace = new Workspace({ root, allowOutside: true });
    assert.equal(workspace.display(root), ".");
    assert.equal(workspace.display(join(root, "sub", "x.ts")), join("sub", "x.ts"));
    assert.equal(workspace.display("/elsewhere/x.ts"), "/elsewhere/x.ts");
  });

  it("commands see the workspace's env and the call's, the call's winning", async () => {
    const workspace = new Workspace({ root, env: { WORKSPACE_VALUE: "from the workspace", BOTH: "workspace" } });
    const result = await workspace.exec('printf "%s|%s" "$WORKSPACE_VALUE" "$BOTH"', { env: { BOTH: "call" } });
    assert.equal(result.stdout, "from the workspace|call");
  });
});

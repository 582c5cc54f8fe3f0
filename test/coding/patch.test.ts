// apply_patch (v4a) on real files in a temp folder: parse, match, all-or-nothing, confinement.
import assert from "node:assert/strict";
import { existsSync, lstatSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { applyPatch, applyPatchTool, PatchError, parsePatch, Workspace } from "../../src/coding/index.js";
import { Agent, ScriptedModel } from "../../src/index.js";
import { calls, eventsOf, ofType } from "../loop/helpers.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-patch-");
const read = (root: string, name: string) => readFileSync(join(root, name), "utf8");
const patchOf = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

const MAIN = 'import os\nimport sys\n\ndef main():\n    print("Hello")\n    return 0\n\ndef other():\n    return 0\n';

describe("parsePatch", () => {
  it("reads add, delete, update with a move, hints and the end-of-file marker", () => {
    const operations = parsePatch(
      patchOf("*** Add File: a.txt", "+one", "+two", "*** Delete File: b.txt", "*** Update File: c.py", "*** Move to: d.py", "@@ def main():", " x", "-y", "+z", "*** End of File"),
    );
    assert.deepEqual(operations, [
      { type: "add", path: "a.txt", content: "one\ntwo\n" },
      { type: "delete", path: "b.txt" },
      { type: "update", path: "c.py", moveTo: "d.py", hunks: [{ hint: "def main():", endOfFile: true, lines: [{ op: " ", text: "x" }, { op: "-", text: "y" }, { op: "+", text: "z" }] }] },
    ]);
  });

  it("accepts a heredoc wrapper and CRLF line ends", () => {
    const operations = parsePatch(`apply_patch <<'EOF'\r\n${patchOf("*** Delete File: a.txt").replace(/\n/g, "\r\n")}\r\nEOF\r\n`);
    assert.deepEqual(operations, [{ type: "delete", path: "a.txt" }]);
  });

  it("names the line of each kind of malformed patch", () => {
    const cases: Array<[string, RegExp]> = [
      ["*** Add File: a\n+x\n*** End Patch", /must start with "\*\*\* Begin Patch"/],
      ["*** Begin Patch\n*** Add File: a\n+x", /must end with "\*\*\* End Patch"/],
      [patchOf(), /no operations/],
      [patchOf("*** Add File: a", "x"), /line 3: every line of an added file \(a\) must start with "\+"/],
      [patchOf("*** Update File: a", "@@", "?x"), /line 4: a hunk line of a must start with/],
      [patchOf("*** Update File: a"), /needs at least one hunk/],
      [patchOf("*** Update File: a", "@@ f", " x"), /a: hunk 1 \(@@ f\) changes nothing/],
      [patchOf("*** Frobnicate File: a"), /line 2: expected "\*\*\* Add File: "/],
      [patchOf("*** Delete File: "), /line 2: "\*\*\* Delete File:" needs a file path/],
    ];
    for (const [patch, expected] of cases) assert.throws(() => parsePatch(patch), (error: Error) => error instanceof PatchError && expected.test(error.message), patch);
  });
});

describe("applyPatch", () => {
  it("updates with a hint and context, adds, deletes and moves, and reports each change with its diff", async () => {
    const root = freshRoot({ "src/main.py": MAIN, "old.txt": "bye\n", "config.py": "DEFAULT_TIMEOUT = 30\nDEBUG = False\n" });
    const result = await applyPatch(
      new Workspace({ root }),
      patchOf(
        "*** Update File: src/main.py",
        "@@ def main():",
        '     print("Hello")',
        "-    return 0",
        '+    print("World")',
        "+    return 1",
        "*** Add File: src/helpers.py",
        "+def greet(name):",
        '+    return f"Hello, {name}!"',
        "*** Delete File: old.txt",
        "*** Update File: config.py",
        "*** Move to: settings/config.py",
        "@@ DEFAULT_TIMEOUT = 30",
        "-DEFAULT_TIMEOUT = 30",
        "+DEFAULT_TIMEOUT = 60",
      ),
    );
    // Only main()'s "return 0" changed, not other()'s.
    assert.equal(read(root, "src/main.py"), MAIN.replace('    print("Hello")\n    return 0', '    print("Hello")\n    print("World")\n    return 1'));
    assert.equal(read(root, "src/helpers.py"), 'def greet(name):\n    return f"Hello, {name}!"\n');
    assert.equal(existsSync(join(root, "old.txt")), false);
    assert.equal(existsSync(join(root, "config.py")), false);
    assert.equal(read(root, "settings/config.py"), "DEFAULT_TIMEOUT = 60\nDEBUG = False\n");
    assert.equal(result.summary, "M src/main.py\nA src/helpers.py\nD old.txt\nM config.py -> settings/config.py");
    assert.deepEqual(
      result.changes.map(({ action, added, removed }) => [action, added, removed]),
      [
        ["update", 2, 1],
        ["add", 2, 0],
        ["delete", 0, 1],
        ["update", 1, 1],
      ],
    );
    assert.match(result.changes[0].diff, /^@@ -3,7 \+3,8 @@\n \n def main\(\):\n {5}print\("Hello"\)\n- {4}return 0\n\+ {4}print\("World"\)\n\+ {4}return 1\n \n def other\(\):\n {5}return 0$/);
  });

  it("applies several hunks of one file in order, keeps CRLF line ends, and matches despite trailing spaces and typographic quotes", async () => {
    const root = freshRoot({ "a.txt": "one\r\ntwo  \r\nthree\r\nsay “hi”\r\nfive\r\n" });
    await applyPatch(new Workspace({ root }), patchOf("*** Update File: a.txt", "@@", " one", "-two", "+TWO", "@@", '-say "hi"', "+say hello", " five", "*** End of File"));
    assert.equal(read(root, "a.txt"), "one\r\nTWO\r\nthree\r\nsay hello\r\nfive\r\n");
  });

  it("a hunk of added lines only goes after its hint, or at the end", async () => {
    const root = freshRoot({ "a.py": "def f():\n    pass\n" });
    await applyPatch(new Workspace({ root }), patchOf("*** Update File: a.py", "@@ def f():", "+    # first", "@@", "+def g():", "+    pass"));
    assert.equal(read(root, "a.py"), "def f():\n    # first\n    pass\ndef g():\n    pass\n");
  });

  it("is all or nothing: a later hunk that does not match leaves every file as it was, and the error names the file and the hunk", async () => {
    const root = freshRoot({ "a.txt": "alpha\n", "b.txt": "one\ntwo\nthree\n" });
    const workspace = new Workspace({ root });
    await assert.rejects(
      applyPatch(workspace, patchOf("*** Update File: a.txt", "-alpha", "+ALPHA", "*** Add File: c.txt", "+new", "*** Update File: b.txt", "@@ one", " two", "-four", "+FOUR")),
      (error: Error) => error instanceof PatchError && /^b\.txt: hunk 1 \(@@ one\): its context and removed lines were not found; expected lines starting with:\ntwo\nfour\n/.test(error.message),
    );
    assert.equal(read(root, "a.txt"), "alpha\n");
    assert.equal(read(root, "b.txt"), "one\ntwo\nthree\n");
    assert.equal(existsSync(join(root, "c.txt")), false);
  });

  it("refuses what cannot be done, naming the file: a hint that is missing, an update or delete of a missing file, an add over an existing one, a move onto one", async () => {
    const root = freshRoot({ "a.txt": "alpha\n", "b.txt": "beta\n" });
    const workspace = new Workspace({ root });
    const cases: Array<[string, RegExp]> = [
      [patchOf("*** Update File: a.txt", "@@ def nowhere():", "-alpha", "+x"), /PatchError: a\.txt: hunk 1 \(@@ def nowhere\(\):\): the line "def nowhere\(\):" was not found/],
      [patchOf("*** Update File: missing.txt", "-a", "+b"), /PatchError: missing\.txt: cannot update it, the file does not exist/],
      [patchOf("*** Delete File: missing.txt"), /PatchError: missing\.txt: cannot delete it, the file does not exist/],
      [patchOf("*** Add File: a.txt", "+x"), /PatchError: a\.txt: cannot add it, the file already exists/],
      [patchOf("*** Update File: a.txt", "*** Move to: b.txt", "-alpha", "+x"), /PatchError: a\.txt: cannot move it to b\.txt, that file already exists/],
    ];
    for (const [patch, expected] of cases) await assert.rejects(applyPatch(workspace, patch), expected);
    assert.equal(read(root, "a.txt"), "alpha\n");
    assert.equal(read(root, "b.txt"), "beta\n");
  });

  it("is confined to the workspace: '..', absolute paths and symlinks out are refused before anything is written", async () => {
    const outside = freshRoot({ "secret.txt": "keep\n" });
    const root = freshRoot({ "a.txt": "alpha\n" });
    symlinkSync(outside, join(root, "link"));
    const workspace = new Workspace({ root });
    for (const path of ["../x.txt", join(outside, "secret.txt"), "link/secret.txt"]) {
      await assert.rejects(applyPatch(workspace, patchOf("*** Update File: a.txt", "-alpha", "+changed", `*** Delete File: ${path}`)), /outside the workspace/);
    }
    assert.equal(read(root, "a.txt"), "alpha\n");
    assert.equal(read(outside, "secret.txt"), "keep\n");
  });
});

describe("the apply_patch tool", () => {
  it("answers the summary, keeps the diffs in tool-end, and gives the model a readable error when nothing was changed", async () => {
    const root = freshRoot({ "a.txt": "alpha\n" });
    const model = new ScriptedModel([
      calls(["apply_patch", { patch: patchOf("*** Update File: a.txt", "-alpha", "+beta") }, "p1"]),
      calls(["apply_patch", { patch: patchOf("*** Update File: a.txt", "-alpha", "+gamma") }, "p2"]),
      "done",
    ]);
    const run = new Agent({ model, tools: [applyPatchTool(new Workspace({ root }))] }).run("go");
    const ends = ofType(await eventsOf(run), "tool-end");
    assert.equal((await run).state, "COMPLETED");
    assert.equal(ends[0].output, "Applied the patch:\nM a.txt");
    assert.deepEqual((ends[0].structured as { changes: Array<{ diff: string }> }).changes[0].diff, "@@ -1,1 +1,1 @@\n-alpha\n+beta");
    assert.equal(ends[1].isError, true);
    assert.match(ends[1].output, /^apply_patch: a\.txt: hunk 1: its context and removed lines were not found; expected lines starting with:\nalpha\n.*Nothing was changed\.$/s);
    assert.equal(read(root, "a.txt"), "beta\n");
  });

  it("rolls back when a later write fails: files it changed, deleted, moved or created are as they were, byte for byte, and no folder it made is left", async () => {
    // Bytes a text round trip would change: CRLF, a Latin-1 é (not UTF-8), no final newline.
    const root = freshRoot({
      "src/a.txt": Buffer.from("first\r\nsecond\r\ncaf\xe9 third", "latin1"),
      "old.txt": Buffer.from("gone \xff\xfe soon\n", "latin1"),
      "m.txt": "to move\n",
    });
    const before = snapshot(root);
    // Every path resolves and every hunk matches, so the plan holds; writing then fails on its last
    // file: `d/x.txt` was written (making the folder d), and `d` cannot also be written as a file
    // (EISDIR, even for root, where a read-only folder would not stop the write).
    const patch = patchOf(
      "*** Update File: src/a.txt",
      "-second",
      "+SECOND",
      "*** Delete File: old.txt",
      "*** Add File: new/deeper/c.txt",
      "+created",
      "*** Update File: m.txt",
      "*** Move to: moved/m.txt",
      "-to move",
      "+moved",
      "*** Add File: d/x.txt",
      "+inside d",
      "*** Add File: d",
      "+d as a file",
    );
    const model = new ScriptedModel([calls(["apply_patch", { patch }, "p1"]), "done"]);
    const run = new Agent({ model, tools: [applyPatchTool(new Workspace({ root }))] }).run("go");
    const [end] = ofType(await eventsOf(run), "tool-end");
    assert.equal((await run).state, "COMPLETED");
    assert.equal(end.isError, true);
    assert.match(end.output, /^apply_patch: writing the patched files failed \(EISDIR[^)]*\); the files already written were restored\. Nothing was changed\.$/);
    assert.deepEqual(snapshot(root), before);
  });
});

/** Every folder and file under `root` (relative path -> its bytes, or "folder"), to compare a tree before and after. */
function snapshot(root: string, prefix = ""): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const name of readdirSync(join(root, prefix)).sort()) {
    const path = join(prefix, name);
    if (lstatSync(join(root, path)).isDirectory()) {
      entries[path] = "folder";
      Object.assign(entries, snapshot(root, path));
    } else entries[path] = readFileSync(join(root, path)).toString("hex");
  }
  return entries;
}

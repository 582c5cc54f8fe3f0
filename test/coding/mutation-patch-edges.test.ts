// apply_patch at the edges the first mutation run of src/coding/patch.ts left (90.9 %): whitespace
// around the markers and the heredoc's end, a hunk line that mentions a marker, the looser comparisons
// where an earlier line matches a looser one, a file without a final newline, a hint that also ends
// the file, the blank last context line (with only added lines, with longer hunks, at the end), an
// end-of-file hunk after an earlier one, a file added then deleted, and diffs of repeated lines.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { applyPatch, lineDiff, PatchError, parsePatch, Workspace } from "../../src/coding/index.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-patch-edges-");
const patchOf = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

/** `file` (a.txt) after `hunk` (the lines of an update of a.txt). */
async function updated(file: string, ...hunk: string[]): Promise<string> {
  const root = freshRoot({ "a.txt": file });
  await applyPatch(new Workspace({ root }), patchOf("*** Update File: a.txt", ...hunk));
  return readFileSync(join(root, "a.txt"), "utf8");
}

/** The PatchError message of `hunk` on a.txt holding `file`. */
async function refused(file: string, ...hunk: string[]): Promise<string> {
  const root = freshRoot({ "a.txt": file });
  const error = await applyPatch(new Workspace({ root }), patchOf("*** Update File: a.txt", ...hunk)).then(
    () => assert.fail("the patch applied"),
    (caught: Error) => caught,
  );
  assert.ok(error instanceof PatchError, String(error));
  assert.equal(readFileSync(join(root, "a.txt"), "utf8"), file);
  return error.message;
}

describe("parsePatch, whitespace and markers", () => {
  it("a last line of spaces after the end, an indented end after an added file, a heredoc end with trailing spaces", () => {
    assert.deepEqual(parsePatch(`${patchOf("*** Delete File: a")}\n   \n\t`), [{ type: "delete", path: "a" }]);
    assert.deepEqual(parsePatch("*** Begin Patch\n*** Add File: a\n+x\n  *** End Patch"), [{ type: "add", path: "a", content: "x\n" }]);
    assert.deepEqual(parsePatch(`cat <<'EOF'\n${patchOf("*** Delete File: a")}\nEOF  `), [{ type: "delete", path: "a" }]);
  });

  it("a hunk line that mentions a marker is a hunk line; the end-of-file marker may carry trailing spaces", () => {
    const [update] = parsePatch(patchOf("*** Update File: a", "-x", "+say('*** Add File: b')", "*** End of File  "));
    assert.deepEqual(update, { type: "update", path: "a", moveTo: undefined, hunks: [{ endOfFile: true, lines: [{ op: "-", text: "x" }, { op: "+", text: "say('*** Add File: b')" }] }] });
  });
});

describe("applyPatch, matching edges", () => {
  it("each looser comparison is tried on every line before the next one: trailing spaces in the patch, spaces around it, spaces and punctuation together", async () => {
    // The patch line has trailing spaces: the later line equal without them wins over the earlier one equal once trimmed.
    assert.equal(await updated("  foo\nfoo\n", "-foo  ", "+bar"), "  foo\nbar\n");
    // The patch line has spaces around it: the line equal once trimmed wins over the earlier one equal once normalized.
    assert.equal(await updated("\u2018x\u2019\n  'x'\n", "- 'x' ", "+y"), "\u2018x\u2019\ny\n");
    // Spaces around typographic quotes: trimmed and normalized.
    assert.equal(await updated("  say \u201Chi\u201D  \n", '-say "hi"', "+bye"), "bye\n");
  });

  it("a file without a final newline keeps its last line (and gets the newline)", async () => {
    assert.equal(await updated("a\nb", "-a", "+A"), "A\nb\n");
  });

  it("a hint is looked for from the top, even when the file's last line is the same", async () => {
    assert.equal(await updated("h\nx\nh\n", "@@ h", "-x", "+y"), "h\ny\nh\n");
    assert.equal(await refused("a\n", "@@ nowhere", "-a", "+b"), 'a.txt: hunk 1 (@@ nowhere): the line "nowhere" was not found; read the file and copy its lines exactly');
  });

  it("a blank last context line: a match with the blank line is taken first; else the lines without it are looked for at the end", async () => {
    assert.equal(await updated("a\n\nx\na\n", "-a", "+A", ""), "A\n\nx\na\n");
    assert.equal(await updated("x\ny\nx\n", "-x", "+z", ""), "x\ny\nz\n");
    assert.equal(await updated("a\nb\n", "-a", "-b", "+c", "+d", ""), "c\nd\n");
    // An added blank last line is not a context line: lines that are not there are refused.
    assert.match(await refused("a\n", "-b", "+"), /hunk 1: its context and removed lines were not found/);
  });

  it("only added lines before a blank last context line go at the end of the file, or after the hint", async () => {
    assert.equal(await updated("a\nb\n", "+c", ""), "a\nb\nc\n");
    assert.equal(await updated("a\nb\n", "@@ a", "+x", ""), "a\nx\nb\n");
  });

  it("an end-of-file hunk is not matched before the end of the previous hunk", async () => {
    assert.equal(
      await refused("a\nx\n", "-x", "+y", "@@", "-x", "+z", "*** End of File"),
      "a.txt: hunk 2: its context and removed lines were not found from line 3 on at the end of the file; expected lines starting with:\nx\nRead the file and copy its lines exactly",
    );
  });
});

describe("applyPatch, files and diffs", () => {
  it("a file added then deleted in the same patch leaves nothing behind", async () => {
    const root = freshRoot();
    const result = await applyPatch(new Workspace({ root }), patchOf("*** Add File: t.txt", "+x", "*** Delete File: t.txt"));
    assert.equal(result.summary, "A t.txt\nD t.txt");
    assert.equal(existsSync(join(root, "t.txt")), false);
  });

  it("lineDiff of repeated lines: one removed, one added", () => {
    assert.deepEqual(lineDiff("x\nx\n", "x\n"), { diff: "@@ -1,2 +1,1 @@\n x\n-x", added: 0, removed: 1 });
    assert.deepEqual(lineDiff("x\n", "x\nx\n"), { diff: "@@ -1,1 +1,2 @@\n x\n+x", added: 1, removed: 0 });
  });
});

// apply_patch on the inputs the mutation run (npm run mutation -- src/coding/patch.ts) showed
// untested: the parser's leniencies and refusals one by one, the looser comparisons in their order,
// every typographic character, the end-of-file anchor, a patch touching one file twice, a folder or a
// binary file as the target, and the diff's header and cut.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { applyPatch, lineDiff, PatchError, parsePatch, Workspace } from "../../src/coding/index.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-patch-mutation-");
const read = (root: string, name: string) => readFileSync(join(root, name), "utf8");
const patchOf = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

/** Applies `patch` to a fresh workspace holding `files`; the workspace's root. */
async function applied(files: Record<string, string | Buffer>, patch: string): Promise<string> {
  const root = freshRoot(files);
  await applyPatch(new Workspace({ root }), patch);
  return root;
}

/** The PatchError message `patch` is refused with on a fresh workspace holding `files`. */
async function refusal(files: Record<string, string | Buffer>, patch: string): Promise<string> {
  const root = freshRoot(files);
  const error = await applyPatch(new Workspace({ root }), patch).then(
    () => assert.fail("the patch applied"),
    (caught: Error) => caught,
  );
  assert.ok(error instanceof PatchError, String(error));
  assert.equal(error.name, "PatchError");
  return error.message;
}

describe("parsePatch, line by line", () => {
  it("refuses a patch that is not a string, and an empty one, saying what line 1 is", () => {
    assert.throws(() => parsePatch(42 as never), { name: "PatchError", message: "the patch must be a string" });
    assert.throws(() => parsePatch(""), { message: 'the patch must start with "*** Begin Patch" (line 1 is "")' });
    assert.throws(() => parsePatch("*** Begin Patch\n*** Delete File: a\n*** End"), {
      message: 'the patch must end with "*** End Patch" (the last line is "*** End")',
    });
  });

  it("skips blank lines around the patch and between operations, and spaces around the markers and the paths", () => {
    const patch = `\n \n  *** Begin Patch \n*** Add File:   spaced name.txt  \n+x\n*** Delete File: b\n\n   \n\t*** End Patch\t\n\n`;
    assert.deepEqual(parsePatch(patch), [
      { type: "add", path: "spaced name.txt", content: "x\n" },
      { type: "delete", path: "b" },
    ]);
  });

  it("unwraps a heredoc however its delimiter is quoted or spaced, and only a heredoc", () => {
    const body = patchOf("*** Delete File: a");
    for (const opener of ["apply_patch <<EOF", "apply_patch << 'EOF'", 'apply_patch <<"PATCH"  ', "<<'X'"]) {
      const closer = opener.match(/(\w+)['"]?\s*$/)?.[1] as string;
      assert.deepEqual(parsePatch(`${opener}\n${body}\n${closer}`), [{ type: "delete", path: "a" }], opener);
    }
    // Not a heredoc: the first line does not end with the delimiter, or the last is not a bare word.
    assert.throws(() => parsePatch(`apply_patch <<EOF extra\n${body}\nEOF`), /must start with/);
    assert.throws(() => parsePatch(`apply_patch <<EOF\n${body}\nEOF now`), /must start with/);
  });

  it("reads an added file with no lines as an empty file, and an update with only a move as a rename", () => {
    assert.deepEqual(parsePatch(patchOf("*** Add File: empty.txt", "*** Update File: a", "*** Move to: b")), [
      { type: "add", path: "empty.txt", content: "" },
      { type: "update", path: "a", moveTo: "b", hunks: [] },
    ]);
  });

  it("reads '@@' alone or followed by spaces as a hunk without a hint, and a blank hunk line as an empty context line", () => {
    const [update] = parsePatch(patchOf("*** Update File: a", "@@", "-x", "+y", "@@   ", " one", "", "-two"));
    assert.deepEqual(update, {
      type: "update",
      path: "a",
      moveTo: undefined,
      hunks: [
        { hint: undefined, endOfFile: false, lines: [{ op: "-", text: "x" }, { op: "+", text: "y" }] },
        { hint: undefined, endOfFile: false, lines: [{ op: " ", text: "one" }, { op: " ", text: "" }, { op: "-", text: "two" }] },
      ],
    });
  });

  it("a line starting with '@@' but not '@@ ' is a hunk line, refused for its first character", () => {
    assert.throws(() => parsePatch(patchOf("*** Update File: a", "@@x", "-y")), { message: 'line 3: a hunk line of a must start with " " (context), "-" (remove) or "+" (add), got "@@x"' });
  });

  it("an added file ends at the next operation, whatever it is", () => {
    assert.deepEqual(parsePatch(patchOf("*** Add File: a", "+1", "*** Update File: b", "-x", "+y")), [
      { type: "add", path: "a", content: "1\n" },
      { type: "update", path: "b", moveTo: undefined, hunks: [{ endOfFile: false, lines: [{ op: "-", text: "x" }, { op: "+", text: "y" }] }] },
    ]);
  });

  it("names the line of each misplaced or empty marker, and the hunk that changes nothing", () => {
    const cases: Array<[string, string]> = [
      [patchOf("*** Add File:  "), 'line 2: "*** Add File:" needs a file path'],
      [patchOf("*** Update File: "), 'line 2: "*** Update File:" needs a file path'],
      [patchOf("*** Update File: a", "*** Move to: ", "-x"), 'line 3: "*** Move to:" needs a file path'],
      [patchOf("*** Update File: a", "*** End of File"), 'line 3: "*** End of File" must follow the lines of a hunk (a)'],
      [patchOf("*** Update File: a", "@@ f", "*** End of File"), 'line 4: "*** End of File" must follow the lines of a hunk (a)'],
      [patchOf("*** Update File: a", "-x", "*** End of File", "+y"), 'line 5: lines after "*** End of File" need a new "@@" hunk (a)'],
      [patchOf("*** Update File: a", "@@", " x"), 'a: hunk 1 changes nothing: it has no "-" or "+" lines'],
      [patchOf("*** Update File: a", "-x", "@@ g", " y"), 'a: hunk 2 (@@ g) changes nothing: it has no "-" or "+" lines'],
      [patchOf("*** Update File: a", "*** Move to: b", "@@", " y"), 'a: hunk 1 changes nothing: it has no "-" or "+" lines'],
      [patchOf("   "), "the patch has no operations (add, delete or update a file between the Begin and End lines)"],
      [patchOf("*** Update File: a"), 'a: "*** Update File" needs at least one hunk (or a "*** Move to:" line)'],
      [patchOf("*** Add File: a", "+x", "oops"), 'line 4: every line of an added file (a) must start with "+", got "oops"'],
      [patchOf("+x"), 'line 2: expected "*** Add File: ", "*** Delete File: " or "*** Update File: ", got "+x"'],
    ];
    for (const [patch, message] of cases) assert.throws(() => parsePatch(patch), { name: "PatchError", message }, patch);
  });
});

describe("applyPatch, matching", () => {
  it("prefers an exact match to a looser one earlier in the file, at each step of looseness", async () => {
    // Exact beats trailing spaces; trailing spaces beat surrounding spaces; spaces beat punctuation.
    const cases: Array<[string, string, string]> = [
      ["foo  \nfoo\n", "foo", "foo  \nbar\n"],
      ["  foo\nfoo  \n", "foo", "  foo\nbar\n"],
      ["say “hi”\n  say \"hi\"\n", 'say "hi"', "say “hi”\nbar\n"],
    ];
    for (const [file, removed, expected] of cases) {
      const root = await applied({ "a.txt": file }, patchOf("*** Update File: a.txt", `-${removed}`, "+bar"));
      assert.equal(read(root, "a.txt"), expected, JSON.stringify(file));
    }
  });

  it("matches every typographic dash, quote and space a model may write for its ASCII", async () => {
    const typographic = "a\u2010b\u2011c\u2012d\u2013e\u2014f\u2212g \u2018h\u2019 \u201Ai\u201B \u201Cj\u201D \u201Ek\u201F l\u00A0m\u2002n\u2003o\u2009p\u202Fq";
    const ascii = "a-b-c-d-e-f-g 'h' 'i' \"j\" \"k\" l m n o p q";
    const root = await applied({ "a.txt": `${typographic}\n` }, patchOf("*** Update File: a.txt", `-${ascii}`, "+plain"));
    assert.equal(read(root, "a.txt"), "plain\n");
    // And the other way round: the file in ASCII, the patch typographic.
    const back = await applied({ "a.txt": `${ascii}\n` }, patchOf("*** Update File: a.txt", `-${typographic}`, "+plain"));
    assert.equal(read(back, "a.txt"), "plain\n");
    // A character outside the list is not taken for another.
    assert.match(await refusal({ "a.txt": "x\u2015y\n" }, patchOf("*** Update File: a.txt", "-x-y", "+z")), /hunk 1: its context and removed lines were not found/);
  });

  it("an end-of-file hunk changes the last occurrence, not the first; without the marker the first", async () => {
    const file = "x\ny\nx\n";
    assert.equal(read(await applied({ "a.txt": file }, patchOf("*** Update File: a.txt", "-x", "+z", "*** End of File")), "a.txt"), "x\ny\nz\n");
    assert.equal(read(await applied({ "a.txt": file }, patchOf("*** Update File: a.txt", "-x", "+z")), "a.txt"), "z\ny\nx\n");
    // Lines not found with the end-of-file marker: the error says where they were looked for.
    assert.equal(
      await refusal({ "a.txt": "y\n" }, patchOf("*** Update File: a.txt", "-x", "+z", "*** End of File")),
      "a.txt: hunk 1: its context and removed lines were not found at the end of the file; expected lines starting with:\nx\nRead the file and copy its lines exactly",
    );
  });

  it("a later hunk is looked for after the earlier one, and its error says from which line", async () => {
    const file = "a\nb\nc\nb\n";
    assert.equal(read(await applied({ "a.txt": file }, patchOf("*** Update File: a.txt", "@@", "-c", "+C", "@@", "-b", "+B")), "a.txt"), "a\nb\nC\nB\n");
    assert.equal(
      await refusal({ "a.txt": file }, patchOf("*** Update File: a.txt", "-c", "+C", "@@", "-a", "+A")),
      "a.txt: hunk 2: its context and removed lines were not found from line 4 on; expected lines starting with:\na\nRead the file and copy its lines exactly",
    );
    assert.equal(
      await refusal({ "a.txt": file }, patchOf("*** Update File: a.txt", "-c", "+C", "@@ a", "-b", "+B")),
      'a.txt: hunk 2 (@@ a): the line "a" was not found from line 4 on; read the file and copy its lines exactly',
    );
    // The expected lines shown are the first three of the hunk's context and removed lines.
    assert.match(
      await refusal({ "a.txt": file }, patchOf("*** Update File: a.txt", " 1", " 2", "+new", "-3", "-4")),
      /^a\.txt: hunk 1: its context and removed lines were not found; expected lines starting with:\n1\n2\n3\nRead/,
    );
  });

  it("a blank last context line stands for the file's final newline", async () => {
    const root = await applied({ "a.txt": "a\nb\n" }, patchOf("*** Update File: a.txt", "-b", "+c", ""));
    assert.equal(read(root, "a.txt"), "a\nc\n");
    // Only when the blank line is on both sides (context): a blank removed line must match a blank line.
    assert.match(await refusal({ "a.txt": "a\nb\n" }, patchOf("*** Update File: a.txt", "-b", "-", "+c")), /hunk 1: its context and removed lines were not found/);
  });

  it("a hunk of added lines after a hint goes right after the hint's line, and cursor moves on from there", async () => {
    const root = await applied({ "a.py": "one\ntwo\nthree\n" }, patchOf("*** Update File: a.py", "@@ two", "+2.5", "@@", "-three", "+3"));
    assert.equal(read(root, "a.py"), "one\ntwo\n2.5\n3\n");
  });

  it("removing every line leaves an empty file, not a newline", async () => {
    const root = await applied({ "a.txt": "only\n", "b.txt": "x\r\ny\r\n" }, patchOf("*** Update File: a.txt", "-only", "*** Update File: b.txt", "-x", "+X"));
    assert.equal(read(root, "a.txt"), "");
    assert.equal(read(root, "b.txt"), "X\r\ny\r\n");
  });
});

describe("applyPatch, files", () => {
  it("sees its own earlier operations on a file: delete then add replaces it, add then update changes the new text, a move onto a deleted file", async () => {
    const root = await applied(
      { "a.txt": "old\n", "b.txt": "b\n", "c.txt": "c\n" },
      patchOf(
        "*** Delete File: a.txt",
        "*** Add File: a.txt",
        "+new",
        "*** Add File: n.txt",
        "+first",
        "*** Update File: n.txt",
        "-first",
        "+second",
        "*** Delete File: c.txt",
        "*** Update File: b.txt",
        "*** Move to: c.txt",
        "-b",
        "+moved",
      ),
    );
    assert.equal(read(root, "a.txt"), "new\n");
    assert.equal(read(root, "n.txt"), "second\n");
    assert.equal(read(root, "c.txt"), "moved\n");
    assert.equal(existsSync(join(root, "b.txt")), false);
    // Deleting a file the patch deleted already: it does not exist any more.
    assert.equal(await refusal({ "a.txt": "x\n" }, patchOf("*** Delete File: a.txt", "*** Delete File: a.txt")), "a.txt: cannot delete it, the file does not exist");
  });

  it("a move onto its own path is an update, and a pure rename reports no lines", async () => {
    const root = freshRoot({ "a.txt": "x\n", "b.txt": "keep\n" });
    const result = await applyPatch(new Workspace({ root }), patchOf("*** Update File: a.txt", "*** Move to: ./a.txt", "-x", "+y", "*** Update File: b.txt", "*** Move to: sub/b.txt"));
    assert.equal(read(root, "a.txt"), "y\n");
    assert.equal(read(root, "sub/b.txt"), "keep\n");
    assert.equal(existsSync(join(root, "b.txt")), false);
    assert.equal(result.summary, "M a.txt\nM b.txt -> sub/b.txt");
    assert.deepEqual(result.changes[0].moveTo, undefined);
    assert.deepEqual(result.changes[1], { action: "update", path: "b.txt", moveTo: "sub/b.txt", diff: "", added: 0, removed: 0 });
  });

  it("refuses a folder or a binary file as the file to change, naming it, and writes nothing", async () => {
    const files = { "a.txt": "a\n", "bin.dat": Buffer.from([0x61, 0x00, 0x62, 0x0a]) };
    const folder = freshRoot(files);
    mkdirSync(join(folder, "dir"));
    await assert.rejects(applyPatch(new Workspace({ root: folder }), patchOf("*** Update File: a.txt", "-a", "+b", "*** Delete File: dir")), {
      name: "PatchError",
      message: "dir is a folder, not a file",
    });
    assert.equal(read(folder, "a.txt"), "a\n");
    assert.equal(await refusal(files, patchOf("*** Update File: bin.dat", "-a", "+b")), "bin.dat is a binary file; apply_patch changes text files only");
    // A NUL after the first 8 KB does not make a file binary.
    const late = `${"x".repeat(8192)}\n\0\n`;
    const root = await applied({ "late.txt": late }, patchOf("*** Update File: late.txt", "+end"));
    assert.equal(read(root, "late.txt"), `${late}end\n`);
  });
});

describe("lineDiff", () => {
  it("counts the lines of context before and after the change in its header", () => {
    const before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    const after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
    assert.deepEqual(lineDiff(before, after), { diff: "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8", added: 1, removed: 1 });
    assert.deepEqual(lineDiff(before, after, 1), { diff: "@@ -4,3 +4,3 @@\n 4\n-5\n+five\n 6", added: 1, removed: 1 });
    assert.deepEqual(lineDiff("a\nb\n", "a\nb\nc\n"), { diff: "@@ -1,2 +1,3 @@\n a\n b\n+c", added: 1, removed: 0 });
    assert.deepEqual(lineDiff("a\r\nb\r\n", "a\nb\n"), { diff: "", added: 0, removed: 0 });
    assert.deepEqual(lineDiff("x\n", ""), { diff: "@@ -1,1 +1,0 @@\n-x", added: 0, removed: 1 });
  });

  it("stops after maxLines lines, saying how many more there were", () => {
    const after = `${Array.from({ length: 10 }, (_, index) => `l${index}`).join("\n")}\n`;
    assert.deepEqual(lineDiff("", after, 3, 4), { diff: "@@ -1,0 +1,10 @@\n+l0\n+l1\n+l2\n… 7 more diff lines", added: 10, removed: 0 });
    assert.equal(lineDiff("", after, 3, 11).diff.split("\n").length, 11);
  });

  it("an added file over 400 lines keeps 400 lines of diff in the change", async () => {
    const lines = Array.from({ length: 500 }, (_, index) => `+${index}`);
    const result = await applyPatch(new Workspace({ root: freshRoot() }), patchOf("*** Add File: big.txt", ...lines));
    const diff = result.changes[0].diff.split("\n");
    assert.equal(diff.length, 401);
    assert.equal(diff[400], "… 101 more diff lines");
    assert.equal(result.changes[0].added, 500);
  });
});

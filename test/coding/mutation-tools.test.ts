// The coding tools on the inputs the mutation run (npm run mutation -- src/coding/tools.ts) showed
// untested: what the model is told (descriptions, parameters and their limits), read_file's wide line
// numbers, default limit and image types, write_file and edit_file's answers and refusals, shell's
// answer when a signal ends the command, glob's order and refusals, grep's limits and engines.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { applyPatchTool, codingTools, grepTool, Workspace } from "../../src/coding/index.js";
import { Agent, ScriptedModel, type Tool, type ToolContext, type ToolResultValue } from "../../src/index.js";
import { calls, eventsOf, ofType } from "../loop/helpers.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-tools-mutation-");
const context = { signal: new AbortController().signal, progress() {} } as unknown as ToolContext;

/** The tools of a workspace on `root`, by name. */
function toolsOf(root: string, options: { allowOutside?: boolean } = {}): Record<string, Tool> {
  const workspace = new Workspace({ root, inheritEnv: { PATH: process.env.PATH }, ...options });
  const tools = [...codingTools(workspace), applyPatchTool(workspace)];
  return Object.fromEntries(tools.map((tool) => [tool.name, tool]));
}

/** One tool's answer, as `{ isError, text, structured }` (text: the content as a string). */
async function call(root: string, name: string, args: Record<string, unknown>, options?: { allowOutside?: boolean }) {
  const value = (await toolsOf(root, options)[name].execute(args as never, context)) as ToolResultValue | string;
  if (typeof value === "string") return { isError: false, text: value, structured: undefined as unknown };
  const text = typeof value.content === "string" ? value.content : JSON.stringify(value.content);
  return { isError: value.isError === true, text, structured: value.structured as unknown };
}

/** The tool-end events of a scripted session whose first turn makes `toolCalls` in one wave. */
async function wave(root: string, ...toolCalls: Array<[string, Record<string, unknown>, string]>) {
  const run = new Agent({ model: new ScriptedModel([calls(...toolCalls), "done"]), tools: Object.values(toolsOf(root)) }).run("go");
  const ends = ofType(await eventsOf(run), "tool-end");
  assert.equal((await run).state, "COMPLETED");
  return Object.fromEntries(ends.map((end) => [end.toolCallId, end]));
}

describe("what the model is told", () => {
  it("each tool's description names its defaults and limits, and every parameter is described", () => {
    const tools = toolsOf(freshRoot());
    assert.deepEqual(Object.keys(tools), ["read_file", "write_file", "edit_file", "shell", "glob", "grep", "apply_patch"]);
    assert.match(tools.read_file.description, /limit the number of lines \(default 2000\)/);
    assert.match(tools.grep.description, /at most max_results \(default 100\)/);
    assert.match(tools.shell.description, /timeout \(default 10 s\)/);
    assert.match(tools.apply_patch.description, /\*\*\* Begin Patch\n\*\*\* Add File: /);
    for (const tool of Object.values(tools)) {
      assert.equal(tool.kind, "coding", tool.name);
      assert.ok(tool.description.length > 40, tool.name);
      const schema = tool.parameters as { properties: Record<string, { type: string; description?: string }>; required: string[]; additionalProperties: boolean };
      assert.equal(schema.additionalProperties, false, tool.name);
      for (const [field, property] of Object.entries(schema.properties)) {
        if (field !== "case_insensitive") assert.ok((property.description ?? "").length > 5, `${tool.name}.${field}`);
      }
    }
    assert.deepEqual(
      Object.fromEntries(Object.values(tools).map((tool) => [tool.name, (tool.parameters as { required: string[] }).required])),
      { read_file: ["file_path"], write_file: ["file_path", "content"], edit_file: ["file_path", "old_string", "new_string"], shell: ["command"], glob: ["pattern"], grep: ["pattern"], apply_patch: ["patch"] },
    );
    assert.match((tools.read_file.parameters as { properties: { limit: { description: string } } }).properties.limit.description, /default 2000/);
    assert.match((tools.grep.parameters as { properties: { max_results: { description: string } } }).properties.max_results.description, /default 100/);
  });

  it("arguments outside the schema's limits are refused before the tool runs", async () => {
    const root = freshRoot({ "a.txt": "a\n" });
    const ends = await wave(
      root,
      ["read_file", { file_path: "a.txt", offset: 0 }, "offset"],
      ["read_file", { file_path: "a.txt", limit: 0 }, "limit"],
      ["shell", { command: "echo hi > shell.txt", timeout_ms: 600_001 }, "timeout"],
      ["grep", { pattern: "a", max_results: 0 }, "max"],
      ["grep", { pattern: "a", case_insensitive: "yes" }, "case"],
      ["write_file", { file_path: "b.txt", content: "x", mode: "0600" }, "extra"],
    );
    for (const id of ["offset", "limit", "timeout", "max", "case", "extra"]) assert.equal(ends[id].isError, true, id);
    assert.match(ends.offset.output, /offset/);
    assert.match(ends.timeout.output, /timeout_ms/);
    assert.match(ends.extra.output, /unknown field "mode"/);
    assert.throws(() => readFileSync(join(root, "shell.txt")), { code: "ENOENT" });
  });

  it("two patches of one wave run one after the other: the second sees the file the first added", async () => {
    const root = freshRoot();
    const ends = await wave(
      root,
      ["apply_patch", { patch: "*** Begin Patch\n*** Add File: a.txt\n+one\n*** End Patch" }, "p1"],
      ["apply_patch", { patch: "*** Begin Patch\n*** Update File: a.txt\n-one\n+two\n*** End Patch" }, "p2"],
    );
    assert.equal(ends.p1.isError, false);
    assert.equal(ends.p2.isError, false, ends.p2.output);
    assert.equal(readFileSync(join(root, "a.txt"), "utf8"), "two\n");
  });

  it("each tool's own line limit: read_file's 2,000 lines whole, glob cut at 500 lines, grep at 200, both keeping the end", async () => {
    const files: Record<string, string> = { "long.txt": `${Array.from({ length: 2000 }, (_, index) => `l${index}`).join("\n")}\n` };
    for (let index = 0; index < 600; index++) files[`many/f${String(index).padStart(3, "0")}.txt`] = "hit\n";
    const root = freshRoot(files);
    const ends = await wave(root, ["read_file", { file_path: "long.txt" }, "r"], ["glob", { pattern: "many/*.txt" }, "g"], ["grep", { pattern: "hit", max_results: 300 }, "s"]);
    assert.equal(ends.r.truncated, false);
    assert.equal((ends.r.result.content as string).split("\n").length, 2000);
    assert.equal(ends.g.truncated, true);
    assert.match(ends.g.result.content as string, /^\[agentloop: 100 lines removed from the output of "glob" \(limit 500 lines, mode tail\)/);
    assert.equal(ends.s.truncated, true);
    assert.match(ends.s.result.content as string, /^\[agentloop: 101 lines removed from the output of "grep" \(limit 200 lines, mode tail\)[^\n]*\n/);
    assert.ok((ends.s.result.content as string).endsWith("[more matches; stopped at max_results 300]"));
  });

  it("read_file's answer is cut at 50,000 characters, head and tail", async () => {
    const root = freshRoot({ "wide.txt": `${"a".repeat(30_000)}\n${"b".repeat(30_000)}\n` });
    const ends = await wave(root, ["read_file", { file_path: "wide.txt" }, "r"]);
    assert.equal(ends.r.truncated, true);
    const text = ends.r.result.content as string;
    assert.match(text, /characters removed from the output of "read_file" \(limit 50000 characters, mode head_tail\)/);
    assert.ok(text.startsWith("   1 | aaa") && text.endsWith("bbb"));
  });
});

describe("read_file", () => {
  it("widens the line numbers past 9999, and reads 2000 lines when no limit is given", async () => {
    const lines = Array.from({ length: 10_001 }, (_, index) => `l${index + 1}`);
    const root = freshRoot({ "long.txt": `${lines.join("\n")}\n`, "blank.txt": "\n" });
    assert.equal((await call(root, "read_file", { file_path: "long.txt", offset: 9_999 })).text, " 9999 | l9999\n10000 | l10000\n10001 | l10001");
    const first = (await call(root, "read_file", { file_path: "long.txt" })).text.split("\n");
    assert.equal(first.length, 2001);
    assert.equal(first[1999], "2000 | l2000");
    assert.equal(first[2000], "[lines 1-2000 of 10001; read on with offset 2001]");
    assert.equal((await call(root, "read_file", { file_path: "long.txt", offset: 10_001 })).text, "10001 | l10001");
    assert.deepEqual(await call(root, "read_file", { file_path: "long.txt", offset: 10_002 }), {
      isError: true,
      text: "read_file: offset 10002 is past the end of long.txt (10001 lines)",
      structured: undefined,
    });
    assert.equal((await call(root, "read_file", { file_path: "blank.txt" })).text, "   1 | ");
  });

  it("answers every image type as an image, whatever the case of its extension; other binaries are refused", async () => {
    const bytes = Buffer.from([0xff, 0xd8, 0x00, 0x01]);
    const types: Record<string, string> = { "a.png": "image/png", "b.JPG": "image/jpeg", "c.jpeg": "image/jpeg", "d.gif": "image/gif", "e.webp": "image/webp" };
    const root = freshRoot({ ...Object.fromEntries(Object.keys(types).map((name) => [name, bytes])), "f.bmp": bytes });
    for (const [name, mediaType] of Object.entries(types)) {
      const value = (await toolsOf(root).read_file.execute({ file_path: name } as never, context)) as ToolResultValue;
      assert.deepEqual(value.content, [
        { type: "text", text: `${name} (${mediaType}, 4 bytes)` },
        { type: "image", data: bytes.toString("base64"), mediaType },
      ]);
    }
    assert.deepEqual(await call(root, "read_file", { file_path: "f.bmp" }), { isError: true, text: "read_file: f.bmp is a binary file (4 bytes); it cannot be shown as text", structured: undefined });
  });
});

describe("write_file and edit_file", () => {
  it("write_file replaces a file, reporting its bytes and the diff; a folder is refused", async () => {
    const root = freshRoot({ "a.txt": "old\n" });
    mkdirSync(join(root, "dir"));
    assert.deepEqual(await call(root, "write_file", { file_path: "a.txt", content: "café\n" }), {
      isError: false,
      text: "Replaced a.txt (6 bytes)",
      structured: { path: "a.txt", action: "update", added: 1, removed: 1, diff: "@@ -1,1 +1,1 @@\n-old\n+café" },
    });
    assert.equal(readFileSync(join(root, "a.txt"), "utf8"), "café\n");
    assert.deepEqual(await call(root, "write_file", { file_path: "new.txt", content: "x\n" }), {
      isError: false,
      text: "Created new.txt (2 bytes)",
      structured: { path: "new.txt", action: "add", added: 1, removed: 0, diff: "@@ -1,0 +1,1 @@\n+x" },
    });
    assert.deepEqual(await call(root, "write_file", { file_path: "dir", content: "x" }), { isError: true, text: "write_file: dir is a folder", structured: undefined });
  });

  it("edit_file refuses an empty or unchanged old_string and a binary file; counts occurrences without overlap; replaces once literally", async () => {
    const root = freshRoot({ "a.txt": "aaa b\n", "bin.dat": Buffer.from([0x61, 0, 0x62]) });
    const refusals: Array<[Record<string, unknown>, string]> = [
      [{ file_path: "a.txt", old_string: "", new_string: "x" }, "edit_file: old_string is empty; use write_file to create a file"],
      [{ file_path: "a.txt", old_string: "b", new_string: "b" }, "edit_file: old_string and new_string are the same; nothing to change"],
      [{ file_path: "bin.dat", old_string: "a", new_string: "c" }, "edit_file: bin.dat is a binary file"],
    ];
    for (const [args, text] of refusals) assert.deepEqual(await call(root, "edit_file", args), { isError: true, text, structured: undefined });
    // "aa" occurs once in "aaa" (occurrences do not overlap); "$&" is put in literally.
    assert.deepEqual(await call(root, "edit_file", { file_path: "a.txt", old_string: "aa", new_string: "$&!" }), {
      isError: false,
      text: "Edited a.txt: 1 replacement",
      structured: { path: "a.txt", action: "update", added: 1, removed: 1, diff: "@@ -1,1 +1,1 @@\n-aaa b\n+$&!a b" },
    });
    assert.equal(readFileSync(join(root, "a.txt"), "utf8"), "$&!a b\n");
    // replace_all with a single occurrence: one replacement, said in the singular.
    assert.equal((await call(root, "edit_file", { file_path: "a.txt", old_string: "b", new_string: "c", replace_all: true })).text, "Edited a.txt: 1 replacement");
  });
});

describe("apply_patch and shell answers", () => {
  it("apply_patch names a path refusal as any other, and says nothing was changed", async () => {
    const root = freshRoot();
    assert.deepEqual(await call(root, "apply_patch", { patch: "*** Begin Patch\n*** Add File: ../x.txt\n+x\n*** End Patch" }), {
      isError: true,
      text: `apply_patch: path "../x.txt" is outside the workspace ${root} ('..' leaves the root, resolves to ${join(root, "../x.txt")}); only paths inside the workspace are allowed. Nothing was changed.`,
      structured: undefined,
    });
  });

  it("shell: an exit by a signal says which, a failing command is not an error, stderr alone is shown, and the structured result holds no output", async () => {
    const root = freshRoot();
    const killed = await call(root, "shell", { command: "kill -KILL $$" });
    assert.equal(killed.text, "exit code: none (SIGKILL)");
    assert.equal(killed.isError, false);
    const failed = await call(root, "shell", { command: "echo oops >&2; exit 3" });
    assert.deepEqual({ ...failed, structured: undefined }, { isError: false, text: "exit code: 3\nstderr:\noops", structured: undefined });
    const { durationMs, ...rest } = failed.structured as { durationMs: number };
    assert.deepEqual(rest, { exitCode: 3, signal: null, timedOut: false, aborted: false });
    assert.equal(typeof durationMs, "number");
  });
});

describe("glob", () => {
  it("orders files of the same time by path, answers when nothing matches, lists no symlink (tinyglobby does not list them when not following them)", async () => {
    const names = ["c.txt", "a.txt", "b/z.txt", "b/a.txt"];
    const root = freshRoot(Object.fromEntries(names.map((name) => [name, name])));
    for (const name of names) utimesSync(join(root, name), new Date(2024, 0, 1), new Date(2024, 0, 1));
    assert.equal((await call(root, "glob", { pattern: "**/*.txt" })).text, "a.txt\nb/a.txt\nb/z.txt\nc.txt");
    assert.equal((await call(root, "glob", { pattern: "**/*.md" })).text, "No files match **/*.md");
    symlinkSync(join(root, "c.txt"), join(root, "link.md"));
    symlinkSync(join(root, "b"), join(root, "folder.md"));
    symlinkSync(join(root, "gone"), join(root, "dangling.md"));
    assert.equal((await call(root, "glob", { pattern: "*.md" })).text, "No files match *.md");
  });

  it("lists more files than are checked at once, with their times", async () => {
    const files: Record<string, string> = {};
    for (let index = 0; index < 70; index++) files[`f${String(index).padStart(2, "0")}.txt`] = "x";
    const root = freshRoot(files);
    utimesSync(join(root, "f05.txt"), new Date(2030, 0, 1), new Date(2030, 0, 1));
    utimesSync(join(root, "f66.txt"), new Date(2029, 0, 1), new Date(2029, 0, 1));
    const listed = (await call(root, "glob", { pattern: "*.txt" })).text.split("\n");
    assert.equal(listed.length, 70);
    assert.deepEqual(listed.slice(0, 2), ["f05.txt", "f66.txt"]);
  });

  it("refuses a pattern that climbs out, however it is written, unless the workspace allows outside paths", async () => {
    const root = freshRoot({ "a/x.txt": "x" });
    for (const pattern of ["/etc/*", "a/../../*", "..\\*"]) {
      const answer = await call(root, "glob", { pattern }).catch((error: Error) => ({ isError: true, text: error.message }));
      assert.equal(answer.text, `glob: the pattern "${pattern}" may not be absolute or contain '..'; give a folder inside the workspace as path instead`, pattern);
    }
    // '..' inside a name is not a climb.
    writeFileSync(join(root, "a", "..x.txt"), "x");
    assert.equal((await call(root, "glob", { pattern: "a/..x*" })).text, "a/..x.txt");
    assert.equal((await call(join(root, "a"), "glob", { pattern: "../a/x.txt" }, { allowOutside: true })).text, "x.txt");
  });
});

describe("grep", () => {
  it("a missing path, a file as path, a bad glob_filter, exactly max_results matches", async () => {
    const root = freshRoot({ "a.txt": "hit 1\nhit 2\n", "b.txt": "hit 3\n" });
    assert.deepEqual(await call(root, "grep", { pattern: "hit", path: "nope" }), { isError: true, text: "grep: nope does not exist", structured: undefined });
    assert.deepEqual(await call(root, "grep", { pattern: "hit", path: "b.txt" }), { isError: false, text: "b.txt:1: hit 3", structured: { engine: "javascript", matches: 1 } });
    await assert.rejects(call(root, "grep", { pattern: "hit", glob_filter: "../*" }), { message: `grep: glob_filter "../*" may not be absolute or contain '..'; give a folder inside the workspace as path instead` });
    for (const engine of ["auto", false] as const) {
      const value = (await grepTool(new Workspace({ root }), { ripgrep: engine }).execute({ pattern: "hit", max_results: 3 } as never, context)) as ToolResultValue;
      assert.equal(value.content, "a.txt:1: hit 1\na.txt:2: hit 2\nb.txt:1: hit 3", String(engine));
      assert.deepEqual(value.structured, { engine: engine === false ? "javascript" : "ripgrep", matches: 3 });
    }
  });

  it("the JavaScript search: case-insensitive on the whole file, at most max_results from one file, no file over 5 MB, no binary file", async () => {
    const root = freshRoot({
      "upper.txt": "NEEDLE\n",
      "many.txt": "needle\nneedle\nneedle\nneedle\n",
      "big.txt": `needle\n${"x".repeat(5_000_001)}`,
      "bin.dat": Buffer.from("needle\0\n"),
    });
    const search = async (args: Record<string, unknown>) => ((await grepTool(new Workspace({ root }), { ripgrep: false }).execute(args as never, context)) as ToolResultValue).content;
    assert.equal(await search({ pattern: "needle", case_insensitive: true, glob_filter: "upper.txt" }), "upper.txt:1: NEEDLE");
    assert.equal(await search({ pattern: "needle", max_results: 2 }), "many.txt:1: needle\nmany.txt:2: needle\n[more matches; stopped at max_results 2]");
    assert.equal(await search({ pattern: "needle", glob_filter: "{big,bin}.*" }), "No matches for needle");
  });

  it("a search already aborted answers no matches", async () => {
    const root = freshRoot({ "a.txt": "needle\n" });
    const aborted = { signal: AbortSignal.abort(), progress() {} } as unknown as ToolContext;
    const value = (await grepTool(new Workspace({ root }), { ripgrep: false }).execute({ pattern: "needle" } as never, aborted)) as ToolResultValue;
    assert.equal(value.content, "No matches for needle");
  });
});

describe("what the first mutation run left (2026-11-27)", () => {
  it("read_file: 9,999 lines keep 4-digit numbers; a last line without a newline is kept", async () => {
    const lines = Array.from({ length: 9_999 }, (_, index) => `l${index + 1}`);
    const root = freshRoot({ "n.txt": `${lines.join("\n")}\n`, "open.txt": "a\nb", "crlf.txt": "a\r\nb\r\n" });
    assert.equal((await call(root, "read_file", { file_path: "n.txt", offset: 9_998 })).text, "9998 | l9998\n9999 | l9999");
    assert.equal((await call(root, "read_file", { file_path: "open.txt" })).text, "   1 | a\n   2 | b");
    assert.equal((await call(root, "read_file", { file_path: "crlf.txt" })).text, "   1 | a\n   2 | b");
  });

  it("glob lists files only, never a folder", async () => {
    const root = freshRoot({ "dir/x.txt": "x", "a.txt": "a" });
    utimesSync(join(root, "a.txt"), new Date(2024, 0, 1), new Date(2024, 0, 1));
    utimesSync(join(root, "dir/x.txt"), new Date(2024, 0, 1), new Date(2024, 0, 1));
    assert.equal((await call(root, "glob", { pattern: "*" })).text, "a.txt");
    assert.equal((await call(root, "glob", { pattern: "**" })).text, "a.txt\ndir/x.txt");
  });

  it("write_file's answer is cut at 1,000 characters, keeping the end", async () => {
    const root = freshRoot();
    const path = Array.from({ length: 5 }, (_, index) => `${index}${"d".repeat(220)}`).join("/");
    const ends = await wave(root, ["write_file", { file_path: `${path}/f.txt`, content: "x" }, "w"]);
    assert.equal(ends.w.truncated, true);
    const text = ends.w.result.content as string;
    assert.match(text, /characters removed from the output of "write_file" \(limit 1000 characters, mode tail\)/);
    assert.ok(text.endsWith("/f.txt (1 bytes)"));
  });

  it("apply_patch's answer is cut at 10,000 characters, keeping the end", async () => {
    const root = freshRoot();
    const names = Array.from({ length: 50 }, (_, index) => `${String(index).padStart(2, "0")}${"p".repeat(240)}.txt`);
    const patch = `*** Begin Patch\n${names.map((name) => `*** Add File: ${name}\n+x\n`).join("")}*** End Patch`;
    const ends = await wave(root, ["apply_patch", { patch }, "p"]);
    assert.equal(ends.p.truncated, true);
    const text = ends.p.result.content as string;
    assert.match(text, /characters removed from the output of "apply_patch" \(limit 10000 characters, mode tail\)/);
    assert.ok(text.endsWith(`A ${names[49]}`));
  });

  it("the JavaScript grep: a file of exactly 5,000,000 bytes is searched; '$' matches before a CRLF; no line past the last", async () => {
    const root = freshRoot({
      "five.txt": `needle\n${"x".repeat(5_000_000 - 8)}\n`,
      "crlf.txt": "one\r\nneedle\r\n",
      "fine.txt": "define\n",
    });
    const search = async (args: Record<string, unknown>) => ((await grepTool(new Workspace({ root }), { ripgrep: false }).execute(args as never, context)) as ToolResultValue).content;
    assert.equal(await search({ pattern: "needle", glob_filter: "five.txt" }), "five.txt:1: needle");
    assert.equal(await search({ pattern: "^needle$", glob_filter: "crlf.txt" }), "crlf.txt:2: needle");
    // Searched line by line: "one" is followed by nothing in its line, though by "\r" in the file.
    assert.equal(await search({ pattern: "one(?!\\r)", glob_filter: "crlf.txt" }), "crlf.txt:1: one");
    assert.equal(await search({ pattern: "fine", glob_filter: "fine.txt" }), "fine.txt:1: define");
  });
});

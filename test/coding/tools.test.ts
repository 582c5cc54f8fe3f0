// The coding tools through the loop: a scripted session on real files in a temp folder, real commands.
import assert from "node:assert/strict";
import { readFileSync, symlinkSync, utimesSync, } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { codingTools, Workspace } from "../../src/coding/index.js";
import { Agent, type LoopEvent, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "../loop/helpers.js";
import { workspaces } from "./workspaces.js";

const { freshRoot } = workspaces("agentloop-coding-tools-");

/** Runs a scripted session over a workspace; returns its events and the results the model saw, in order. */
async function session(root: string, script: string[]) {
  const agent = new Agent({ model: new ScriptedModel(script), tools: codingTools(new Workspace({ root, inheritEnv: { PATH: process.env.PATH } })) });
  const run = agent.run("go");
  const events = await eventsOf(run);
  const result = await run;
  // In the order the calls were made (calls of one wave may end in any order).
  const order = ofType(events, "tool-start").map((start) => start.toolCallId);
  const ends = ofType(events, "tool-end").sort((a, b) => order.indexOf(a.toolCallId) - order.indexOf(b.toolCallId));
  return { events, result, ends, seen: ends.map((end) => ({ isError: end.isError, text: resultText(end.result) })) };
}

function resultText(message: ToolResultMessage): string {
  return typeof message.content === "string" ? message.content : JSON.stringify(message.content);
}

describe("a scripted coding session", () => {
  it("reads, fails a non-unique edit, edits uniquely, runs the tests with shell and fixes the file", async () => {
    const root = freshRoot({
      "src/math.js": "export const add = (a, b) => a - b;\nexport const sub = (a, b) => a - b;\n",
      "check.mjs": 'import { add, sub } from "./src/math.js";\nif (add(2, 3) !== 5 || sub(5, 3) !== 2) { console.error("FAIL add", add(2, 3)); process.exit(1); }\nconsole.log("PASS");\n',
    });
    const { result, ends, seen, events } = await session(root, [
      calls(["read_file", { file_path: "src/math.js" }, "r"]),
      calls(["shell", { command: "node check.mjs", description: "run the tests" }, "t1"]),
      calls(["edit_file", { file_path: "src/math.js", old_string: "a - b", new_string: "a + b" }, "e1"]),
      calls(["edit_file", { file_path: "src/math.js", old_string: "add = (a, b) => a - b", new_string: "add = (a, b) => a + b" }, "e2"]),
      calls(["shell", { command: "node check.mjs" }, "t2"]),
      "Fixed add: it subtracted.",
    ]);
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "Fixed add: it subtracted.");
    assert.deepEqual(
      ends.map((end) => end.name),
      ["read_file", "shell", "edit_file", "edit_file", "shell"],
    );
    assert.equal(seen[0].text, "   1 | export const add = (a, b) => a - b;\n   2 | export const sub = (a, b) => a - b;");
    assert.match(seen[1].text, /^exit code: 1\n/);
    assert.match(seen[1].text, /stderr:\nFAIL add -1/);
    assert.deepEqual(seen[2], {
      isError: true,
      text: "edit_file: old_string matches 2 times in src/math.js; add surrounding lines to make it unique, or set replace_all",
    });
    assert.deepEqual(seen[3], { isError: false, text: "Edited src/math.js: 1 replacement" });
    assert.equal(seen[4].text, "exit code: 0\nstdout:\nPASS");
    assert.equal(readFileSync(join(root, "src/math.js"), "utf8"), "export const add = (a, b) => a + b;\nexport const sub = (a, b) => a - b;\n");
    // The shell output streamed as tool-progress before the call ended.
    const progress = events.filter((event): event is Extract<LoopEvent, { type: "tool-progress" }> => event.type === "tool-progress" && event.toolCallId === "t2");
    assert.deepEqual(
      progress.map((event) => event.data),
      [{ stream: "stdout", text: "PASS\n" }],
    );
    assert.ok(events.indexOf(progress[0]) < events.findIndex((event) => event.type === "tool-end" && event.toolCallId === "t2"));
  });

  it("refuses every path escape as an error result, and the files outside stay untouched", async () => {
    const root = freshRoot({ "in.txt": "inside\n" });
    const outside = freshRoot({ "secret.txt": "secret\n" });
    symlinkSync(outside, join(root, "link"));
    const { seen } = await session(root, [
      calls(
        ["read_file", { file_path: "../ws" }, "a"],
        ["read_file", { file_path: join(outside, "secret.txt") }, "b"],
        ["read_file", { file_path: "link/secret.txt" }, "c"],
        ["write_file", { file_path: "link/new.txt", content: "x" }, "d"],
        ["edit_file", { file_path: "../" + outside.split("/").pop() + "/secret.txt", old_string: "secret", new_string: "leaked" }, "e"],
        ["glob", { pattern: "../**/*.txt" }, "f"],
        ["grep", { pattern: "secret", path: "link" }, "g"],
        ["glob", { pattern: "**/*.txt" }, "h"],
      ),
      "done",
    ]);
    for (const [index, how] of [
      [0, "'..' leaves the root"],
      [1, "absolute path"],
      [2, "a symlink leads out"],
      [3, "a symlink leads out"],
      [4, "'..' leaves the root"],
      [6, "a symlink leads out"],
    ] as const) {
      assert.equal(seen[index].isError, true, `call ${index}`);
      assert.match(seen[index].text, /outside the workspace/, `call ${index}`);
      assert.ok(seen[index].text.includes(how), `call ${index}: ${seen[index].text}`);
    }
    assert.equal(seen[5].isError, true);
    assert.match(seen[5].text, /may not be absolute or contain '\.\.'/);
    // glob does not follow the symlink out either.
    assert.equal(seen[7].text, "in.txt");
    assert.equal(readFileSync(join(outside, "secret.txt"), "utf8"), "secret\n");
  });

  it("truncates shell output to 256 lines, head and tail, with the full output in tool-end", async () => {
    const root = freshRoot();
    const { ends } = await session(root, [calls(["shell", { command: "seq 1 1000" }, "s"]), "ok"]);
    const text = resultText(ends[0].result);
    assert.equal(ends[0].truncated, true);
    assert.match(text, /lines removed from the output of "shell" \(limit 256 lines, mode head_tail\)/);
    assert.ok(text.startsWith("exit code: 0\nstdout:\n1\n2\n"));
    assert.ok(text.endsWith("\n999\n1000"));
    assert.ok(ends[0].output.includes("\n500\n"));
  });

  it("times a shell command out and says the group was killed", async () => {
    const root = freshRoot();
    const { seen } = await session(root, [calls(["shell", { command: "echo started; sleep 30", timeout_ms: 200 }, "s"]), "ok"]);
    assert.equal(seen[0].isError, true);
    assert.match(seen[0].text, /timed out after 200 ms: the command and its children were killed/);
    assert.match(seen[0].text, /stdout:\nstarted/);
  });
});

describe("the file tools", () => {
  it("read_file: offset and limit, a note to read on, binary files refused, images as image parts", async () => {
    const lines = Array.from({ length: 30 }, (_, index) => `line ${index + 1}`).join("\n");
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    const root = freshRoot({ "long.txt": `${lines}\n`, "blob.bin": Buffer.from([1, 2, 0, 3]), "pic.png": png, "empty.txt": "" });
    const { seen, ends } = await session(root, [
      calls(
        ["read_file", { file_path: "long.txt", offset: 9, limit: 3 }, "a"],
        ["read_file", { file_path: "long.txt", offset: 29 }, "b"],
        ["read_file", { file_path: "blob.bin" }, "c"],
        ["read_file", { file_path: "pic.png" }, "d"],
        ["read_file", { file_path: "missing.txt" }, "e"],
        ["read_file", { file_path: "long.txt", offset: 99 }, "f"],
        ["read_file", { file_path: "." }, "g"],
        ["read_file", { file_path: "empty.txt" }, "h"],
      ),
      "ok",
    ]);
    assert.equal(seen[0].text, "   9 | line 9\n  10 | line 10\n  11 | line 11\n[lines 9-11 of 30; read on with offset 12]");
    assert.equal(seen[1].text, "  29 | line 29\n  30 | line 30");
    assert.deepEqual(seen[2], { isError: true, text: "read_file: blob.bin is a binary file (4 bytes); it cannot be shown as text" });
    assert.deepEqual(ends[3].result.content, [
      { type: "text", text: "pic.png (image/png, 12 bytes)" },
      { type: "image", data: png.toString("base64"), mediaType: "image/png" },
    ]);
    assert.deepEqual(seen[4], { isError: true, text: "read_file: missing.txt does not exist" });
    assert.deepEqual(seen[5], { isError: true, text: "read_file: offset 99 is past the end of long.txt (30 lines)" });
    assert.deepEqual(seen[6], { isError: true, text: "read_file: . is a folder; use glob to list its files" });
    assert.deepEqual(seen[7], { isError: false, text: "empty.txt is empty" });
  });

  it("write_file creates folders; edit_file names the count when missing or not unique, replace_all replaces all", async () => {
    const root = freshRoot({ "a.txt": "x x x\n" });
    const { seen } = await session(root, [
      calls(
        ["write_file", { file_path: "deep/new/file.txt", content: "hello\n" }, "w"],
        ["edit_file", { file_path: "a.txt", old_string: "y", new_string: "z" }, "e1"],
        ["edit_file", { file_path: "a.txt", old_string: "x", new_string: "y" }, "e2"],
        ["edit_file", { file_path: "a.txt", old_string: "x", new_string: "$&y", replace_all: true }, "e3"],
        ["edit_file", { file_path: "nope.txt", old_string: "x", new_string: "y" }, "e4"],
      ),
      "ok",
    ]);
    assert.deepEqual(seen[0], { isError: false, text: "Created deep/new/file.txt (6 bytes)" });
    assert.equal(readFileSync(join(root, "deep/new/file.txt"), "utf8"), "hello\n");
    assert.deepEqual(seen[1], { isError: true, text: "edit_file: old_string was not found in a.txt (0 matches); read the file and copy the text exactly" });
    assert.match(seen[2].text, /matches 3 times/);
    assert.deepEqual(seen[3], { isError: false, text: "Edited a.txt: 3 replacements" });
    assert.equal(readFileSync(join(root, "a.txt"), "utf8"), "$&y $&y $&y\n");
    assert.deepEqual(seen[4], { isError: true, text: "edit_file: nope.txt does not exist" });
  });

  it("glob lists newest first and skips node_modules; grep filters by glob, case and max_results", async () => {
    const root = freshRoot({
      "old.ts": "const Needle = 1;\n",
      "src/new.ts": "// needle here\nneedle again\n",
      "src/notes.md": "needle in markdown\n",
      "node_modules/pkg/index.ts": "needle\n",
    });
    utimesSync(join(root, "old.ts"), new Date(2020, 0, 1), new Date(2020, 0, 1));
    utimesSync(join(root, "src/new.ts"), new Date(2025, 0, 1), new Date(2025, 0, 1));
    const { seen } = await session(root, [
      calls(
        ["glob", { pattern: "**/*.ts" }, "g1"],
        ["glob", { pattern: "*.md", path: "src" }, "g2"],
        ["grep", { pattern: "needle", glob_filter: "**/*.ts" }, "r1"],
        ["grep", { pattern: "needle", glob_filter: "**/*.ts", case_insensitive: true, max_results: 2 }, "r2"],
        ["grep", { pattern: "(unclosed" }, "r3"],
        ["grep", { pattern: "nothing-matches-this" }, "r4"],
      ),
      "ok",
    ]);
    assert.equal(seen[0].text, "src/new.ts\nold.ts");
    assert.equal(seen[1].text, "src/notes.md");
    assert.equal(seen[2].text, "src/new.ts:1: // needle here\nsrc/new.ts:2: needle again");
    assert.equal(seen[3].text, "old.ts:1: const Needle = 1;\nsrc/new.ts:1: // needle here\n[more matches; stopped at max_results 2]");
    assert.equal(seen[4].isError, true);
    assert.match(seen[4].text, /invalid regular expression/);
    assert.equal(seen[5].text, "No matches for nothing-matches-this");
  });

  it("grep matches line by line: ^ and $ anchor at each line (CRLF files too), and results stay in path order across many files", async () => {
    const files: Record<string, string> = { "crlf.txt": "one end\r\ntwo\r\n", "lf.txt": "x\nend\nnot the end here\n" };
    for (let index = 0; index < 70; index++) files[`many/f${String(index).padStart(2, "0")}.txt`] = `hit ${index}\n`;
    const root = freshRoot(files);
    const { seen } = await session(root, [
      calls(["grep", { pattern: "end$", path: "crlf.txt" }, "a"], ["grep", { pattern: "^end", glob_filter: "*.txt" }, "b"], ["grep", { pattern: "^hit", max_results: 65 }, "c"]),
      "ok",
    ]);
    assert.equal(seen[0].text, "crlf.txt:1: one end");
    assert.equal(seen[1].text, "lf.txt:2: end");
    const lines = seen[2].text.split("\n");
    assert.equal(lines.length, 66);
    assert.equal(lines[0], "many/f00.txt:1: hit 0");
    assert.equal(lines[64], "many/f64.txt:1: hit 64");
    assert.equal(lines[65], "[more matches; stopped at max_results 65]");
  });
});

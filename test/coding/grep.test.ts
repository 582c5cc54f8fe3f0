// grep's two engines on the same files: ripgrep (when `rg` is installed) and the JavaScript search
// answer the same lines; a pattern rg refuses falls back to JavaScript.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { grepTool, Workspace } from "../../src/coding/index.js";
import type { ToolContext, ToolResultValue } from "../../src/index.js";

const hasRipgrep = spawnSync("rg", ["--version"], { stdio: "ignore" }).status === 0;
const root = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-grep-")));
after(() => rmSync(root, { recursive: true, force: true }));

const files: Record<string, string | Buffer> = {
  "top.ts": "const needle = 1;\nno match\n",
  "src/deep/x.ts": "// Needle here\nneedle at the end: needle\n",
  "src/notes.md": "needle in markdown\n",
  "crlf.txt": "ends with needle\r\nneedle\r\n",
  ".hidden/dot.txt": "needle in a dot folder\n",
  "node_modules/pkg/index.ts": "needle\n",
  "bin.dat": Buffer.from("needle\0binary\n"),
  "a/b.txt": "needle in a\n",
  "a-b/c.txt": "needle in a-b\n",
};
for (const [name, content] of Object.entries(files)) {
  mkdirSync(join(root, name, ".."), { recursive: true });
  writeFileSync(join(root, name), content);
}
for (let index = 0; index < 40; index++) writeFileSync(join(root, "src", `many${String(index).padStart(2, "0")}.txt`), `hit ${index}\n`);

const context = { signal: new AbortController().signal } as ToolContext;
async function grep(engine: "auto" | false, args: Record<string, unknown>) {
  const result = (await grepTool(new Workspace({ root }), { ripgrep: engine }).execute(args as never, context)) as ToolResultValue & { structured: { engine: string } };
  return { text: result.content as string, engine: result.structured.engine };
}

const CASES: Array<Record<string, unknown>> = [
  { pattern: "needle" },
  { pattern: "needle$" },
  { pattern: "^needle" },
  { pattern: "NEEDLE", case_insensitive: true },
  { pattern: "needle", glob_filter: "*.ts" },
  { pattern: "needle", glob_filter: "**/*.ts" },
  { pattern: "needle", path: "src" },
  { pattern: "^hit", max_results: 5 },
  { pattern: "nothing-matches" },
];

describe("grep engines", () => {
  it("the JavaScript search: every case", async () => {
    const answers = await Promise.all(CASES.map((args) => grep(false, args)));
    assert.ok(answers.every((answer) => answer.engine === "javascript"));
    assert.equal(
      answers[0].text,
      [".hidden/dot.txt:1: needle in a dot folder", "a/b.txt:1: needle in a", "a-b/c.txt:1: needle in a-b", "crlf.txt:1: ends with needle", "crlf.txt:2: needle", "src/deep/x.ts:2: needle at the end: needle", "src/notes.md:1: needle in markdown", "top.ts:1: const needle = 1;"].join("\n"),
    );
    assert.equal(answers[1].text, "crlf.txt:1: ends with needle\ncrlf.txt:2: needle\nsrc/deep/x.ts:2: needle at the end: needle");
    assert.equal(answers[4].text, "top.ts:1: const needle = 1;");
    assert.equal(answers[7].text, "src/many00.txt:1: hit 0\nsrc/many01.txt:1: hit 1\nsrc/many02.txt:1: hit 2\nsrc/many03.txt:1: hit 3\nsrc/many04.txt:1: hit 4\n[more matches; stopped at max_results 5]");
    assert.equal(answers[8].text, "No matches for nothing-matches");
  });

  it("ripgrep answers exactly what the JavaScript search answers", { skip: hasRipgrep ? false : "rg is not installed here (apt-get install ripgrep)" }, async () => {
    const answers = await Promise.all(CASES.map((args) => Promise.all([grep(false, args), grep("auto", args)])));
    answers.forEach(([javascript, ripgrep], index) => {
      assert.equal(ripgrep.engine, "ripgrep", JSON.stringify(CASES[index]));
      assert.equal(ripgrep.text, javascript.text, JSON.stringify(CASES[index]));
    });
  });

  it("a pattern ripgrep refuses (look-ahead) is searched in JavaScript", async () => {
    const answer = await grep("auto", { pattern: "needle(?= at)" });
    assert.equal(answer.engine, "javascript");
    assert.equal(answer.text, "src/deep/x.ts:2: needle at the end: needle");
  });
});

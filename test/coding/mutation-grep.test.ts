// grep through ripgrep, on the inputs the mutation run (npm run mutation -- src/coding/ripgrep.ts)
// showed untested: what rg must not list (.git), a file name ending in ":", a
// carriage return inside a line, an answer longer than one pipe read, and a machine whose `rg` is
// missing or broken (the JavaScript search answers instead). Each answer is compared with the
// JavaScript search's on the same files, which is what the tool promises.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { grepTool, Workspace } from "../../src/coding/index.js";
import type { ToolContext, ToolResultValue } from "../../src/index.js";
import { tsChild } from "../ts-child.js";

const hasRipgrep = spawnSync("rg", ["--version"], { stdio: "ignore" }).status === 0;
const skip = hasRipgrep ? false : "rg is not installed here (apt-get install ripgrep)";
const root = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-grep-mutation-")));
after(() => rmSync(root, { recursive: true, force: true }));

const files: Record<string, string> = {
  ".git/config": "needle in git's own files\n",
  "top.ts": "needle at the top\n",
  "sub/deep.ts": "needle below\n",
  "odd:": "needle in a file whose name ends with a colon\n",
  "cr.txt": "before\rneedle after a carriage return\r\n",
  "big.txt": Array.from({ length: 4000 }, (_, index) => `needle ${String(index).padStart(5, "0")} ${"x".repeat(40)}`).join("\n"),
};
for (const [name, content] of Object.entries(files)) {
  mkdirSync(dirname(join(root, name)), { recursive: true });
  writeFileSync(join(root, name), content);
}

const context = { signal: new AbortController().signal } as ToolContext;
async function grep(engine: "auto" | false, args: Record<string, unknown>, folder = root) {
  const result = (await grepTool(new Workspace({ root: folder }), { ripgrep: engine }).execute(args as never, context)) as ToolResultValue & { structured: { engine: string } };
  return { text: result.content as string, engine: result.structured.engine };
}
async function bothEngines(args: Record<string, unknown>) {
  const [javascript, ripgrep] = [await grep(false, args), await grep("auto", args)];
  assert.equal(ripgrep.engine, "ripgrep");
  assert.equal(ripgrep.text, javascript.text);
  return ripgrep.text;
}

describe("grep through ripgrep, compared with the JavaScript search", { skip }, () => {
  it("never lists a file under .git", async () => {
    const text = await bothEngines({ pattern: "git's own" });
    assert.equal(text, "No matches for git's own");
  });

  it("a file whose name ends with ':' keeps its line numbers", async () => {
    const text = await bothEngines({ pattern: "colon" });
    assert.equal(text, "odd::1: needle in a file whose name ends with a colon");
  });

  it("a carriage return inside a line is kept; only the line ending's is dropped", async () => {
    const text = await bothEngines({ pattern: "carriage" });
    assert.equal(text, "cr.txt:1: before\rneedle after a carriage return");
  });

  it("an answer longer than one read of rg's output loses no line at the reads' seams", async () => {
    const text = await bothEngines({ pattern: "needle \\d+ x", max_results: 5000 });
    const lines = text.split("\n");
    assert.equal(lines.length, 4000);
    assert.equal(lines[3999], `big.txt:4000: needle 03999 ${"x".repeat(40)}`);
  });
});

describe("grep: whether rg is used", () => {
  const child = fileURLToPath(new URL("./fixtures/grep-engine.ts", import.meta.url));
  const bin = join(root, "..", `${root.split("/").pop()}-bin`);
  after(() => rmSync(bin, { recursive: true, force: true }));

  async function grepWithPath(path: string, cwd?: string) {
    const args = await tsChild(child);
    const out = execFileSync(process.execPath, [...args, root, "top"], { cwd, env: { ...process.env, PATH: path }, encoding: "utf8" });
    return JSON.parse(out) as { engine: string; text: string };
  }

  it("rg is used whatever the process's working folder holds (here: nothing)", { skip }, async () => {
    const empty = join(bin, "empty");
    mkdirSync(empty, { recursive: true });
    assert.deepEqual(await grepWithPath(process.env.PATH ?? "", empty), { engine: "ripgrep", text: "top.ts:1: needle at the top" });
  });

  it("no rg on the PATH: the JavaScript search answers", async () => {
    mkdirSync(bin, { recursive: true });
    assert.deepEqual(await grepWithPath(bin), { engine: "javascript", text: "top.ts:1: needle at the top" });
  });

  it("an rg that fails to start (`rg --version` exits non-zero): the JavaScript search answers", async () => {
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "rg"), "#!/bin/sh\nexit 3\n");
    chmodSync(join(bin, "rg"), 0o755);
    assert.deepEqual(await grepWithPath(`${bin}:${process.env.PATH}`), { engine: "javascript", text: "top.ts:1: needle at the top" });
  });
});

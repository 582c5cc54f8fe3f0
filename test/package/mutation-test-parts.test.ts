// scripts/mutation/test-parts.mjs: what Stryker's incremental mode does not see, a change to a file a test
// imports. The parts' hash follows a test's imports under test/ (transitively); before an incremental
// run a test file whose parts changed since gets its recorded source marked, so Stryker runs again what
// rests on it (docs/mutation.md).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

type Parts = {
  partsHash(root: string, testFile: string): string;
  recordParts(root: string, incrementalFile: string): Record<string, string>;
  markChangedParts(root: string, incrementalFile: string): string[];
  partsFileOf(incrementalFile: string): string;
  PARTS_CHANGED: string;
};
const parts = (await import(fileURLToPath(new URL("../../scripts/mutation/test-parts.mjs", import.meta.url)))) as Parts;
const root = mkdtempSync(join(tmpdir(), "agentloop-mutation-parts-"));
after(() => rmSync(root, { recursive: true, force: true }));
const write = (path: string, text: string) => {
  mkdirSync(join(root, path, ".."), { recursive: true });
  writeFileSync(join(root, path), text);
};

test("a test whose imported parts changed since the run is marked changed; its own source, src/ and other tests are not what decides", () => {
  write("src/x.ts", "export const x = 1;\n");
  write("test/area/deep.ts", "export const deep = 1;\n");
  write("test/area/helpers.ts", 'export { deep } from "./deep.js";\nimport { x } from "../../src/x.js";\nexport const y = x;\n');
  write("test/area/a.test.ts", 'import { deep } from "./helpers.js";\nconst later = () => import("./late.js");\n');
  write("test/area/late.ts", "export const late = 1;\n");
  write("test/area/b.test.ts", "import assert from 'node:assert';\n");
  write("test/area/c.test.ts", 'import { deep } from "./deep.js";\n');
  const incremental = join(root, "reports/src-area.incremental.json");
  const report = { testFiles: { "test/area/a.test.ts": { source: "a" }, "test/area/b.test.ts": { source: "b" }, "test/area/c.test.ts": { source: "c" } }, files: {} };
  write("reports/src-area.incremental.json", JSON.stringify(report));

  assert.equal(parts.partsHash(root, "test/area/b.test.ts"), "", "no parts: an empty hash");
  const recorded = parts.recordParts(root, incremental);
  assert.deepEqual(Object.keys(recorded).sort(), ["test/area/a.test.ts", "test/area/b.test.ts", "test/area/c.test.ts"]);
  assert.ok(JSON.parse(readFileSync(parts.partsFileOf(incremental), "utf8"))["test/area/a.test.ts"].length > 0);
  assert.deepEqual(parts.markChangedParts(root, incremental), [], "nothing changed: nothing marked");

  // src/ is Stryker's own business (the mutated files): not a part.
  write("src/x.ts", "export const x = 2;\n");
  // The test file itself: Stryker compares it.
  write("test/area/a.test.ts", 'import { deep } from "./helpers.js";\nconst later = () => import("./late.js");\n// edited\n');
  assert.deepEqual(parts.markChangedParts(root, incremental), []);

  // A part two imports down (a.test.ts → helpers.ts → deep.ts): a and c (which imports it directly) are marked.
  write("test/area/deep.ts", "export const deep = 2;\n");
  assert.deepEqual(parts.markChangedParts(root, incremental).sort(), ["test/area/a.test.ts", "test/area/c.test.ts"]);
  const after = JSON.parse(readFileSync(incremental, "utf8"));
  assert.equal(after.testFiles["test/area/a.test.ts"].source, `a${parts.PARTS_CHANGED}`);
  assert.equal(after.testFiles["test/area/b.test.ts"].source, "b");
  // Marked once: a second look before the run leaves it as it is.
  assert.deepEqual(parts.markChangedParts(root, incremental), []);

  // A dynamic import() is a part too; a test file with no recorded hash is left alone.
  parts.recordParts(root, incremental);
  write("test/area/late.ts", "export const late = 2;\n");
  const partsFile = parts.partsFileOf(incremental);
  const hashes = JSON.parse(readFileSync(partsFile, "utf8"));
  delete hashes["test/area/c.test.ts"];
  writeFileSync(partsFile, JSON.stringify(hashes));
  write("reports/src-area.incremental.json", JSON.stringify(report));
  assert.deepEqual(parts.markChangedParts(root, incremental), ["test/area/a.test.ts"]);
});

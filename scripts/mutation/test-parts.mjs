// What Stryker's incremental mode does not see: a change to a file a test file imports. Stryker compares
// a test file's own source (its report's `testFiles`), so a test whose helpers or parts changed
// (`test/server/helpers.ts`, `test/durable/in-process/*.ts`) kept its earlier verdicts. So beside each
// incremental file (`<name>.incremental.json`) a `<name>.test-parts.json` holds, per test file, a hash of
// the files it imports under `test/` (transitively, the test file itself left out: Stryker compares that)
// as they were at the run; before the next `--incremental` run a test file whose parts changed gets its
// recorded source marked changed, and Stryker runs again what rests on it (its tests keep their names,
// so nothing else is lost). The committed baseline carries the hashes of the day it was built.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;
const EXTENSIONS = ["", ".ts", ".mts", ".mjs", ".js", ".cjs", ".json"];

/** A relative specifier of `from` as a file in `test/`, or undefined (outside `test/`, not found). */
function resolvePart(root, from, specifier) {
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.(m|c)?js$/, ".$1ts"), ...EXTENSIONS.map((extension) => base + extension)];
  const found = candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
  if (!found) return undefined;
  const path = relative(root, found);
  return path.startsWith("test/") ? found : undefined;
}

/** The hash of the files `testFile` (a path from `root`) imports under `test/`, transitively; "" when none. */
export function partsHash(root, testFile) {
  const entry = join(root, testFile);
  const seen = new Set([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift();
    let source;
    try {
      source = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const [, specifier] of source.matchAll(IMPORT)) {
      const part = resolvePart(root, file, specifier);
      if (part && !seen.has(part)) {
        seen.add(part);
        queue.push(part);
      }
    }
  }
  const parts = [...seen].filter((file) => file !== entry).sort();
  if (parts.length === 0) return "";
  const hash = createHash("sha256");
  for (const part of parts) hash.update(`${relative(root, part)}\n`).update(readFileSync(part)).update("\n");
  return hash.digest("hex");
}

/** `<name>.test-parts.json` beside `<name>.incremental.json`. */
export const partsFileOf = (incrementalFile) => incrementalFile.replace(/\.incremental\.json$/, ".test-parts.json");

/** Writes the parts' hashes of every test file of `incrementalFile` (after a run, or for the baseline). */
export function recordParts(root, incrementalFile, partsFile = partsFileOf(incrementalFile)) {
  const report = JSON.parse(readFileSync(incrementalFile, "utf8"));
  const hashes = Object.fromEntries(Object.keys(report.testFiles ?? {}).map((testFile) => [testFile, partsHash(root, testFile)]));
  writeFileSync(partsFile, `${JSON.stringify(hashes, null, 1)}\n`);
  return hashes;
}

export const PARTS_CHANGED = "\n// agentloop mutation: a file this test imports changed since this run\n";

/**
 * Before an incremental run: each test file of `incrementalFile` whose parts' hash differs from the one
 * recorded at its run gets its recorded source marked (Stryker then sees it changed). A test file with no
 * recorded hash is left as it is. Returns the test files marked.
 */
export function markChangedParts(root, incrementalFile, partsFile = partsFileOf(incrementalFile)) {
  if (!existsSync(incrementalFile) || !existsSync(partsFile)) return [];
  const recorded = JSON.parse(readFileSync(partsFile, "utf8"));
  const report = JSON.parse(readFileSync(incrementalFile, "utf8"));
  const marked = [];
  for (const [testFile, entry] of Object.entries(report.testFiles ?? {})) {
    if (typeof recorded[testFile] !== "string" || typeof entry?.source !== "string" || entry.source.endsWith(PARTS_CHANGED)) continue;
    if (partsHash(root, testFile) === recorded[testFile]) continue;
    entry.source += PARTS_CHANGED;
    marked.push(testFile);
  }
  if (marked.length > 0) writeFileSync(incrementalFile, JSON.stringify(report));
  return marked;
}

// Runs every *.test.ts under src/ and test/ with node's test runner (TypeScript through tsx).
// Usage: node scripts/run-tests.mjs [filter-substring ...]
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function find(dir, out = []) {
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    if (name === "node_modules") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) find(path, out);
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = [...find("src"), ...find("test")].filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ["--import", "tsx", "--test", "--test-concurrency=4", "--test-timeout=120000", ...files],
  { stdio: "inherit" },
);
process.exit(result.status ?? 1);

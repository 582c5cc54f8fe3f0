// README's coding example is docs/coding.md's (which test/agents/docs-examples.test.ts runs).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

test("README shows docs/coding.md's runnable example verbatim", () => {
  const doc = readFileSync(`${root}docs/coding.md`, "utf8");
  const example = /```ts\n[\s\S]*?```/.exec(doc)?.[0];
  assert.ok(example?.includes('from "agentloop/coding"'));
  assert.ok(readFileSync(`${root}README.md`, "utf8").includes(example!), "README's coding example must equal the first example of docs/coding.md");
});

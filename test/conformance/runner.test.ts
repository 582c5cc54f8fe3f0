// `npm run conformance`: a part whose suite is missing is reported as not run, with the reason.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const runner = fileURLToPath(new URL("../../scripts/conformance.mjs", import.meta.url));

describe("npm run conformance", () => {
  it("prints a table and names why the A2A TCK did not run (no A2A_TCK_DIR, not a clone)", () => {
    const { A2A_TCK_DIR: _unset, ...env } = process.env;
    const missing = spawnSync(process.execPath, [runner, "a2a"], { encoding: "utf8", env });
    assert.equal(missing.status, 0, missing.stderr);
    assert.match(missing.stdout, /\| suite +\| version +\| passed \| failed \| skipped \| notes/);
    assert.match(missing.stdout, /\| a2a-tck \| 0\.3 .*not run: A2A_TCK_DIR is not set: clone https:\/\/github\.com\/a2aproject\/a2a-tck/);
    assert.match(missing.stdout, /\| a2a-tck \| 1\.0 .*not run: A2A_TCK_DIR is not set/);

    const empty = mkdtempSync(join(tmpdir(), "not-a-tck-"));
    try {
      const wrong = spawnSync(process.execPath, [runner, "a2a"], { encoding: "utf8", env: { ...env, A2A_TCK_DIR: empty } });
      assert.equal(wrong.status, 0);
      assert.match(wrong.stdout, new RegExp(`not run: A2A_TCK_DIR=${empty.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not a git clone of a2aproject/a2a-tck`));
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

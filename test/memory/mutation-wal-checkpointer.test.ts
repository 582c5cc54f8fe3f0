// The embedded store's background checkpoints after `close()` (found by mutation testing,
// docs/mutation.md): one scheduled is cancelled by close. Seen through the files: a checkpoint opens its own
// connection to the database file, which creates the file again if the user deleted it after close.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openEmbeddedStore } from "../../src/memory/embedded.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-mutation-checkpointer-"));
after(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
/** A store file alone in a folder of its own. */
const freshFolder = () => {
  const folder = join(root, `f${folders++}`);
  mkdirSync(folder);
  return folder;
};
const removeFiles = (folder: string) => {
  for (const name of readdirSync(folder)) rmSync(join(folder, name));
};
/** Waits `ms`: a checkpoint scheduled `delayMs` < `ms` after an earlier moment has started by then (timers fire in order). */
const elapse = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("embedded store: no background checkpoint after close", () => {
  it("one scheduled a little after the last commit is cancelled: the files deleted after close stay deleted", async () => {
    const folder = freshFolder();
    const store = await openEmbeddedStore({ path: join(folder, "memory.db"), backgroundCheckpoints: { delayMs: 20 } });
    await store.append("s", [{ event_type: "x", content: "a" }]);
    await store.close();
    removeFiles(folder);
    await elapse(60);
    assert.deepEqual(readdirSync(folder), []);
  });
});

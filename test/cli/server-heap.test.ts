import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SERVER_HEAP_GROWING_PERCENT, serverHeapFlag } from "../../src/cli/server-heap.js";

describe("agentloop serve's heap setting", () => {
  it("collects the old generation once it grows 50 % past its live size", () => {
    assert.equal(SERVER_HEAP_GROWING_PERCENT, 50);
    assert.equal(serverHeapFlag([], ""), "--heap-growing-percent=50");
    assert.equal(serverHeapFlag(["--enable-source-maps"], "--max-old-space-size=512"), "--heap-growing-percent=50");
  });

  it("leaves the user's own choice alone, from the node options or NODE_OPTIONS, in either spelling", () => {
    assert.equal(serverHeapFlag(["--heap-growing-percent=0"], ""), undefined);
    assert.equal(serverHeapFlag([], "--max-old-space-size=512 --heap_growing_percent=20"), undefined);
    assert.equal(serverHeapFlag(["--heap-growing-percent", "30"]), undefined);
    // A different flag that merely starts the same way is not a choice.
    assert.equal(serverHeapFlag(["--heap-growing-percentage=5"], ""), "--heap-growing-percent=50");
  });
});

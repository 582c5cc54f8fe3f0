// Issue 12, failure 2: after `kill -9`, zero acknowledged runs are missing events (the embedded store;
// crash-consistency-postgres.test.ts for PostgreSQL; a new store adds a file calling `crashConsistency`).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe } from "node:test";
import { memoryConfigFromEnv, openMemoryStore } from "../../src/memory/index.js";
import { crashConsistency } from "./crash-consistency.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-crash-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** The MEMORY_* environment's store, opened in this process once the child is dead. */
const opener = (env: Record<string, string>) => () => openMemoryStore(memoryConfigFromEnv(env));

describe("crash consistency (embedded store): kill -9 under concurrent streams", () => {
  crashConsistency("embedded", async () => {
    const env = { MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "embedded", "memory.db") };
    return { env, open: opener(env) };
  });
});

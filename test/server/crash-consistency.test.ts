// Issue 12, failure 2: after `kill -9`, zero acknowledged runs are missing events, on every durable store.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe } from "node:test";
import { memoryConfigFromEnv, openMemoryStore } from "../../src/memory/index.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { crashConsistency } from "./crash-consistency.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-crash-"));
after(async () => {
  rmSync(root, { recursive: true, force: true });
  await dropSchemas();
});

/** The MEMORY_* environment's store, opened in this process once the child is dead. */
const opener = (env: Record<string, string>) => () => openMemoryStore(memoryConfigFromEnv(env));

describe("crash consistency: kill -9 under concurrent streams", () => {
  crashConsistency("embedded", async () => {
    const env = { MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "embedded", "memory.db") };
    return { env, open: opener(env) };
  });
  crashConsistency("postgres", async () => {
    const env = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("crash") };
    return { env, open: opener(env) };
  });
});

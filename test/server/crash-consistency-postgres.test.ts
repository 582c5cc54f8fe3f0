// Issue 12, failure 2: after `kill -9`, zero acknowledged runs are missing events (PostgreSQL).
import { after, describe } from "node:test";
import { memoryConfigFromEnv, openMemoryStore } from "../../src/memory/index.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { crashConsistency } from "./crash-consistency.js";

after(dropSchemas);

describe("crash consistency (PostgreSQL): kill -9 under concurrent streams", () => {
  crashConsistency("postgres", async () => {
    const env = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("crash") };
    return { env, open: () => openMemoryStore(memoryConfigFromEnv(env)) };
  });
});

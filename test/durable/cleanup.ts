// The PostgreSQL schemas and `serve` replicas of one durable test file, cleaned up after it (the
// replicas killed with SIGKILL, the schemas dropped), and a durable replica's environment.
import { randomUUID } from "node:crypto";
import { after } from "node:test";
import pg from "pg";
import { postgresUrl } from "../memory/postgres-server.js";
import type { Replica } from "./serve-helpers.js";

/**
 * Schema names `<name>_<tag>` (one tag per file), the list to push the file's replicas onto, and
 * `durableEnv(executor)`: a durable replica's environment on the first two schemas (memory, DBOS).
 */
export function durableTestResources<const Names extends readonly string[]>(...names: Names): {
  tag: string;
  schemas: { [K in keyof Names]: string };
  replicas: Replica[];
  durableEnv: (executor: string, extra?: Record<string, string>) => Record<string, string>;
} {
  const tag = randomUUID().slice(0, 8);
  const schemas = names.map((name) => `${name}_${tag}`) as { [K in keyof Names]: string };
  const replicas: Replica[] = [];
  after(async () => {
    for (const replica of replicas) replica.child.kill("SIGKILL");
    const client = new pg.Client({ connectionString: postgresUrl() });
    await client.connect();
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });
  const durableEnv = (executor: string, extra: Record<string, string> = {}) => ({
    AGENT_NAME: "durable",
    MEMORY_TYPE: "postgres",
    MEMORY_POSTGRES_URL: postgresUrl(),
    MEMORY_POSTGRES_SCHEMA: schemas[0]!,
    DURABLE: "true",
    DURABLE_SCHEMA: schemas[1]!,
    DURABLE_EXECUTOR_ID: executor,
    ...extra,
  });
  return { tag, schemas, replicas, durableEnv };
}

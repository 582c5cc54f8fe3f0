// The real PostgreSQL server the tests use: AGENTLOOP_TEST_PG_URL (set by .ci/run), or started
// here through scripts/start-postgres.sh (idempotent). Each test file works in its own schemas.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";

let url: string | undefined;

export function postgresUrl(): string {
  if (url) return url;
  url = process.env.AGENTLOOP_TEST_PG_URL?.trim();
  if (!url) {
    const script = fileURLToPath(new URL("../../scripts/start-postgres.sh", import.meta.url));
    url = execFileSync("bash", [script], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
  }
  return url;
}

let counter = 0;
const created: string[] = [];

/** A schema name unique to this process and call (parallel test files never collide). */
export function uniqueSchema(label: string): string {
  const name = `t_${label}_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  created.push(name);
  return name;
}

/** Drops every schema this process created. */
export async function dropSchemas(): Promise<void> {
  if (created.length === 0) return;
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    for (const schema of created.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

// scripts/start-postgres.sh called by several processes at once (parallel test files, several
// clones) on one port: they all get the same working server. Runs on a fresh port of its own and
// stops that server afterwards (the shared test server is never touched).
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";

const script = fileURLToPath(new URL("../../scripts/start-postgres.sh", import.meta.url));
const run = promisify(execFile);

/** A port nothing listens on now (the kernel picks it), with no server directory left from before. */
async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    if (!existsSync(`/tmp/agentloop-pg-${port}`)) return port;
  }
}

function pgBin(): string {
  const versions = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(a) - Number(b));
  return `/usr/lib/postgresql/${versions.at(-1)}/bin`;
}

describe("scripts/start-postgres.sh", () => {
  it("three callers at once on a fresh port: one server starts, all three print its URL, and it works", async () => {
    const port = await freePort();
    const dir = `/tmp/agentloop-pg-${port}`;
    const env: NodeJS.ProcessEnv = { ...process.env, AGENTLOOP_PG_PORT: String(port) };
    delete env.AGENTLOOP_PG_DIR;
    try {
      const results = await Promise.allSettled([1, 2, 3].map(() => run("bash", [script], { env, encoding: "utf8" })));
      const failures = results.flatMap((result) => (result.status === "rejected" ? [String(result.reason)] : []));
      assert.deepEqual(failures, [], "every caller succeeds");
      const urls = results.map((result) => (result as PromiseFulfilledResult<{ stdout: string }>).value.stdout.trim());
      const expected = `postgres://postgres@127.0.0.1:${port}/postgres`;
      assert.deepEqual(urls, [expected, expected, expected]);

      const client = new pg.Client({ connectionString: expected });
      await client.connect();
      try {
        const { rows } = await client.query("SELECT current_setting('data_directory') AS data, 1 + 1 AS two");
        assert.equal(rows[0].two, 2);
        assert.equal(rows[0].data, `${dir}/data`, "the port's own data directory");
      } finally {
        await client.end();
      }
      // A later caller reuses the running server.
      const again = await run("bash", [script], { env, encoding: "utf8" });
      assert.equal(again.stdout.trim(), expected);
    } finally {
      if (existsSync(`${dir}/data/postmaster.pid`)) {
        const asPostgres = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--"] : [];
        const command = [...asPostgres, `${pgBin()}/pg_ctl`, "-D", `${dir}/data`, "-m", "immediate", "-w", "stop"];
        execFileSync(command[0]!, command.slice(1), { stdio: "ignore" });
      }
      rmSync(dir, { recursive: true, force: true });
      rmSync(`/tmp/agentloop-pg-${port}.lock`, { force: true });
    }
  });
});

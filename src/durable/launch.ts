// DBOS in this process: one configuration, launched once (which creates or migrates its schema and
// recovers this executor's unfinished runs), and stopped.
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { DurableOptions } from "./types.js";

let launched: { url: string; promise: Promise<void> } | undefined;

/** Whether DBOS is launched (or launching) in this process. */
export function isLaunched(): boolean {
  return launched !== undefined;
}

/** Throws when DBOS was not launched in this process (`what`: the call that needs it). */
export function ensureLaunched(what: string): void {
  if (!launched) throw new Error(`durable ${what}: call launch() first`);
}

/** Configures and launches DBOS for `options` (once per process; again for the same database is the same launch). */
export async function launchDbos(options: DurableOptions): Promise<void> {
  if (launched) {
    if (launched.url !== options.databaseUrl) throw new Error("durableAgent: DBOS is already launched in this process with another database");
    return launched.promise;
  }
  DBOS.setConfig({
    name: options.appName ?? "agentloop",
    systemDatabaseUrl: withIdleTransactionTimeout(options.databaseUrl),
    systemDatabaseSchemaName: options.schema,
    executorID: options.executorId,
    applicationVersion: options.appVersion,
    logLevel: options.logLevel ?? "warn",
  });
  const promise = (async () => {
    await oneAtATime(options.databaseUrl, options.schema ?? "dbos", () => DBOS.launch());
    const { queue } = options;
    if (queue) {
      await DBOS.registerQueue(queue.name, {
        partitionConcurrency: queue.partitionConcurrency ?? 1,
        minPollingIntervalMs: queue.pollingIntervalMs ?? 50,
        onConflict: "always_update",
      });
    }
  })();
  launched = { url: options.databaseUrl, promise };
  try {
    await promise;
  } catch (error) {
    launched = undefined;
    throw error;
  }
}

/** Stops DBOS in this process (unfinished runs stay recoverable). */
export async function shutdownDbos(): Promise<void> {
  if (!launched) return;
  launched = undefined;
  await DBOS.shutdown();
}

/**
 * Launches DBOS (which creates or migrates its schema) holding an advisory lock, released when the
 * connection ends: replicas starting together would otherwise run the same migrations at once and deadlock.
 */
async function oneAtATime(databaseUrl: string, schema: string, launch: () => Promise<void>): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Polled, not waited for: a session waiting on a lock is an open transaction, and the
    // migrations' CREATE INDEX CONCURRENTLY waits for every open transaction of the database.
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [`agentloop.dbos.migrate.${schema}`]);
      if (rows[0]?.locked) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await launch();
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The system database URL with DBOS's `idle_in_transaction_session_timeout` (60 s) in its libpq
 * `options`, sent when a connection starts. Without it DBOS sets the timeout with a query queued on
 * each new pool connection ahead of the borrower's first one, which pg 8 reports on stderr as a
 * DeprecationWarning ("Calling client.query() when the client is already executing a query");
 * DBOS leaves a URL that already sets it alone. A URL that sets it itself, or is not a URL, is kept.
 */
export function withIdleTransactionTimeout(databaseUrl: string, timeoutMs = 60_000): string {
  const url = URL.parse(databaseUrl);
  if (!url || !/^postgres(ql)?:$/.test(url.protocol)) return databaseUrl;
  const options = url.searchParams.get("options") ?? "";
  if (options.includes("idle_in_transaction_session_timeout")) return databaseUrl;
  url.searchParams.set("options", `${options} -c idle_in_transaction_session_timeout=${timeoutMs}`.trim());
  return url.toString();
}

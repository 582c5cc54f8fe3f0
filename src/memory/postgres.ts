/**
 * `agentloop/memory/postgres`: sessions in PostgreSQL through `pg`, so several server replicas
 * share them.
 */
import pg from "pg";
import { AgentLoopError } from "../errors.js";
import { WireStatement } from "./postgres-wire.js";
import { type SqlDatabase, SqlMemoryStore, type SqlStoreOptions, type TextRow } from "./sql-store.js";
import { abortedWaiting, pauseForLock } from "./store.js";

export interface PostgresStoreOptions extends SqlStoreOptions {
  /** A connection string, e.g. `postgres://user:password@host:5432/database`. */
  url?: string;
  /** Use this pool instead of opening one from `url`; `close()` leaves it open. */
  pool?: pg.Pool;
  /** Connections in the pool opened from `url` (default 10). */
  poolSize?: number;
}

/** host:port/database of a URL, never its password. */
function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ""}${parsed.pathname}`;
  } catch {
    return "(unparsable URL)";
  }
}

function describeError(error: unknown, where: string): AgentLoopError {
  const code = (error as { code?: string })?.code;
  const message = (error as Error)?.message || String(error);
  if (code && ["ECONNREFUSED", "ENOTFOUND", "ETIMEDOUT", "ECONNRESET", "EHOSTUNREACH", "EAI_AGAIN"].includes(code)) {
    return new AgentLoopError("network", `memory: cannot reach PostgreSQL at ${where}: ${message}`, { cause: error });
  }
  if (code === "28P01" || code === "28000") {
    return new AgentLoopError("authentication", `memory: PostgreSQL at ${where} refused the credentials: ${message}`, { cause: error });
  }
  if (code === "3D000") return new AgentLoopError("configuration", `memory: ${message} (PostgreSQL at ${where})`, { cause: error });
  if (/timeout/i.test(message)) return new AgentLoopError("timeout", `memory: PostgreSQL at ${where}: ${message}`, { cause: error });
  return new AgentLoopError("unknown", `memory (postgres): ${message}`, { cause: error });
}

/**
 * Write lanes of group commit (see `SqlStoreOptions.groupCommit`) when none are given: 1 for a
 * server on this machine (loopback or a Unix socket), 4 for one elsewhere. Measured with 200
 * sessions appending at once, 1 lane writes ~10x more events/s than one transaction per append,
 * and 4 lanes about as many as 1, overlapping the round trips to a remote server. A local server
 * shares this machine's cores: there 4 lanes write more, smaller groups for the same events and
 * cost PostgreSQL ~1.5-1.9x the CPU per request of 1 lane (0.60-0.76 ms against 0.39-0.41 in bench
 * scenario 5, on 2 cores), which the server's own requests then wait for.
 */
export function defaultWriteLanes(connection: string | undefined): number {
  return connection !== undefined && isLocalServer(connection) ? 1 : 4;
}

/** Whether a connection string (or a bare host) names a server on this machine. */
function isLocalServer(connection: string): boolean {
  let host = connection;
  try {
    const url = new URL(connection);
    // `?host=/var/run/postgresql` (a socket directory) overrides the URL's host.
    host = url.searchParams.get("host") ?? decodeURIComponent(url.hostname);
  } catch {
    // A bare host (a pool's `host` option).
  }
  return host === "" || host.startsWith("/") || host === "localhost" || /^127\./.test(host) || host === "[::1]" || host === "::1";
}

/** How often a request waiting for a session another replica is running asks again. */
const LOCK_POLL_MS = 50;

/**
 * Statements run often are named, so each connection parses and plans them once. One name per
 * text in the whole process: stores on a shared pool never give one name two texts.
 */
const statementNames = new Map<string, string>();
function nameOf(text: string): string {
  let name = statementNames.get(text);
  if (!name) statementNames.set(text, (name = `agentloop_${statementNames.size + 1}`));
  return name;
}

/** A lock attempt or release waiting for the next statement on the lock connection. */
interface LockRequest {
  key: string;
  /** A release names the connection that holds its lock. */
  client?: pg.PoolClient;
  resolve(locked: boolean): void;
  reject(error: unknown): void;
}

function poolDatabase(pool: pg.Pool, where: string, ownsPool: boolean): SqlDatabase {
  // Session locks are PostgreSQL advisory locks held by one dedicated connection: taken with a
  // non-blocking try (so one connection serves every session of this process) and released by
  // the server if the process dies with them.
  // The connections the store keeps (the lock connection, the write lanes'), each with its listener
  // for the connection lost: taken off when the store gives the connection back, so that what then
  // happens to it (idle in the pool, or another user's) is the pool's alone.
  const kept = new Map<pg.PoolClient, () => void>();
  const keep = (client: pg.PoolClient, onLost: () => void) => {
    const lost = () => {
      // Back to the pool, which drops it: kept checked out, it would hold a place in the pool for
      // ever, and the pool's end (the store's close) would wait for it.
      giveBack(client, true);
      onLost();
    };
    kept.set(client, lost);
    client.on("error", lost);
    return client;
  };
  const giveBack = (client: pg.PoolClient, drop: boolean) => {
    const lost = kept.get(client);
    if (!lost) return;
    kept.delete(client);
    client.removeListener("error", lost);
    client.release(drop || undefined);
  };
  let lockConnection: Promise<pg.PoolClient> | undefined;
  const lockClient = () =>
    (lockConnection ??= pool.connect().then(
      (client) =>
        keep(client, () => {
          // A dropped connection released its locks; the next lock opens a new one.
          lockConnection = undefined;
        }),
      (error: unknown) => {
        lockConnection = undefined;
        throw error;
      },
    ));
  // Lock attempts and releases are batched: those made while a batch is on the wire (or in the
  // same turn of the event loop) go together in the next one, one statement for the releases and
  // one for the attempts, instead of a round trip each (200 requests starting together: 2
  // statements, not 200).
  let attempts: LockRequest[] = [];
  let releases: LockRequest[] = [];
  let sending: Promise<void> | undefined;
  const sendBatches = async () => {
    try {
      while (attempts.length > 0 || releases.length > 0) {
        await new Promise((resolve) => setImmediate(resolve));
        const tries = attempts;
        const gone = releases;
        attempts = [];
        releases = [];
        // Releases first, each on the connection that holds its lock.
        for (const client of new Set(gone.map((release) => release.client!))) {
          const mine = gone.filter((release) => release.client === client);
          await client.query("SELECT pg_advisory_unlock(hashtext(k)) FROM unnest($1::text[]) AS k", [mine.map((release) => release.key)]).catch(() => {});
          for (const release of mine) release.resolve(false);
        }
        if (tries.length === 0) continue;
        try {
          const client = await lockClient();
          const { rows } = await client.query(
            "SELECT t.i, pg_try_advisory_lock(hashtext(t.k)) AS locked FROM unnest($1::text[]) WITH ORDINALITY AS t(k, i)",
            [tries.map((attempt) => attempt.key)],
          );
          const locked = new Set(rows.filter((row) => row.locked === true).map((row) => Number(row.i)));
          lastClient = client;
          for (const [index, attempt] of tries.entries()) attempt.resolve(locked.has(index + 1));
        } catch (error) {
          for (const attempt of tries) attempt.reject(error);
        }
      }
    } finally {
      sending = undefined;
    }
  };
  /** The connection the last batch of attempts ran on (the one holding what it took). */
  let lastClient: pg.PoolClient | undefined;
  const send = (list: LockRequest[], request: Omit<LockRequest, "resolve" | "reject">) =>
    new Promise<boolean>((resolve, reject) => {
      list.push({ ...request, resolve, reject });
      sending ??= sendBatches();
    });
  // Each write lane's statements run on a connection the lane keeps (a checkout per group showed
  // in the server's instruction count), when the pool leaves room for it: one per lane, the lock
  // connection, and one for reads; else each statement takes one from the pool.
  const poolMax = (pool.options as { max?: number }).max ?? 10;
  const writers: Array<pg.PoolClient | Promise<pg.PoolClient> | undefined> = [];
  const writer = (lane: number): pg.PoolClient | Promise<pg.PoolClient> =>
    (writers[lane] ??= pool.connect().then(
      (client) => {
        writers[lane] = client;
        return keep(client, () => {
          // A lost connection fails its statement (pg reports it to it); the next group opens another.
          if (writers[lane] === client) writers[lane] = undefined;
        });
      },
      (error: unknown) => {
        writers[lane] = undefined;
        throw error;
      },
    ));
  /** Runs a named statement by hand on a connection (see `WireStatement`). */
  const runOn = (client: pg.PoolClient, text: string, values: ReadonlyArray<string | null>) =>
    new Promise<TextRow[]>((resolve, reject) => {
      client.query(new WireStatement(nameOf(text), text, values, (error, rows) => (error ? reject(error) : resolve(rows!))));
    });
  return {
    statement(text, values, lane) {
      if (lane !== undefined && lane + 3 <= poolMax) {
        const client = writer(lane);
        return client instanceof Promise ? client.then((held) => runOn(held, text, values)) : runOn(client, text, values);
      }
      return new Promise<TextRow[]>((resolve, reject) => {
        pool.connect((error, client) => {
          if (error || !client) return reject(error);
          let released = false;
          const finish = (failure: Error | undefined, rows?: TextRow[]) => {
            if (released) return;
            released = true;
            client.removeListener("error", finish);
            // A statement error leaves the connection usable; anything else (a lost connection) closes it.
            client.release(failure && !(failure instanceof pg.DatabaseError) ? failure : undefined);
            if (failure) reject(failure);
            else resolve(rows!);
          };
          // A connection lost while the statement runs (pg's client emits it; pool.query does the same).
          client.once("error", finish);
          client.query(new WireStatement(nameOf(text), text, values, finish));
        });
      });
    },
    query: async (text, params, prepare) => (await pool.query(prepare ? { name: nameOf(text), text, values: params as unknown[] } : { text, values: params as unknown[] })).rows,
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await fn({ query: async (text, params) => (await client.query(text, params as unknown[])).rows });
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async lock(key, signal) {
      for (;;) {
        if (signal?.aborted) throw abortedWaiting();
        if (await send(attempts, { key })) {
          const client = lastClient!;
          return async () => {
            await send(releases, { key, client });
          };
        }
        await pauseForLock(LOCK_POLL_MS, signal);
      }
    },
    close: async () => {
      await sending;
      const locking = lockConnection;
      lockConnection = undefined;
      if (locking) await locking.then((client) => giveBack(client, true)).catch(() => {});
      // The lanes are idle (the store waits for them before it closes the database).
      for (const held of writers.splice(0)) if (held) await Promise.resolve(held).then((client) => giveBack(client, false), () => {});
      if (ownsPool) await pool.end();
    },
    describeError: (error) => describeError(error, where),
  };
}

/** Connects, creates the tables if needed and returns the store. Rejects with a clear error when the server cannot be used. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<SqlMemoryStore> {
  const poolOptions = options.pool?.options as { connectionString?: string; host?: string } | undefined;
  const connection = options.url ?? poolOptions?.connectionString ?? poolOptions?.host;
  options = { ...options, groupCommit: options.groupCommit ?? { lanes: defaultWriteLanes(connection) } };
  if (options.pool) return SqlMemoryStore.open("postgres", poolDatabase(options.pool, "the given pool", false), options);
  const url = options.url;
  if (typeof url !== "string" || url.length === 0) {
    throw new AgentLoopError("configuration", "memory: the postgres store needs a connection URL (MEMORY_POSTGRES_URL or DATABASE_URL)");
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new AgentLoopError("configuration", `memory: the PostgreSQL URL must start with postgres:// or postgresql://, got ${describeUrl(url)}`);
  }
  const poolSize = options.poolSize ?? 10;
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new AgentLoopError("configuration", "memory: poolSize must be a positive integer");
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 10_000 });
  // An idle connection dropped by the server must not crash the process; the next query reconnects.
  pool.on("error", () => {});
  try {
    return await SqlMemoryStore.open("postgres", poolDatabase(pool, describeUrl(url), true), options);
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
}

export { SqlMemoryStore };

// Scenario 6: memory stores. Events appended per second (one event per append, as a run writes
// them, and batches of 100), and the time to load a 10,000-event session (the event log, and
// the log projected into a conversation history). Stores: in-process (reference), embedded
// (a SQLite file in a temporary directory) and PostgreSQL (AGENTLOOP_TEST_PG_URL, or the local server
// scripts/start-postgres.sh starts when PostgreSQL is installed; skipped otherwise).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryStore, type MemoryStore, type NewMemoryEvent, historyFromEvents } from "../src/memory/index.js";
import { type BenchOptions, type ScenarioReport, formatSpread, isMain, machineInfo, markdownTable, parseBenchOptions, publish, spread } from "./harness.js";

const SESSION_EVENTS = 10_000;

/** A realistic mix, shaped as `sessionMemory` writes it: a user message, a tool call, its result, an answer. */
function eventAt(index: number): NewMemoryEvent {
  const turn = Math.floor(index / 4);
  switch (index % 4) {
    case 0:
      return { event_type: "user_message", content: `Question ${turn}: is anything free next weekend, and what does it cost?` };
    case 1:
      return {
        event_type: "tool_call",
        content: { tool: "get_availability", arguments: { check_in: "2026-12-04", check_out: "2026-12-05", turn } },
        metadata: { run_id: `run_${turn}`, tool_call_id: `call_${turn}`, tool_name: "get_availability" },
      };
    case 2:
      return {
        event_type: "tool_result",
        content: { tool: "get_availability", result: `Rooms free on 2026-12-04: 3 doubles at 180 EUR, 1 suite at 320 EUR (query ${turn}).` },
        metadata: { run_id: `run_${turn}`, tool_call_id: `call_${turn}`, tool_name: "get_availability", is_error: false },
      };
    default:
      return { event_type: "agent_response", content: `Yes: three doubles at 180 EUR and one suite at 320 EUR are free (answer ${turn}).` };
  }
}

interface StoreUnderTest {
  name: string;
  open(): Promise<MemoryStore>;
  cleanup(): Promise<void>;
}

const limits = { maxEventsPerSession: 100_000, maxSessions: 100 };

function postgresUrl(notes: string[]): string | undefined {
  if (process.env.AGENTLOOP_TEST_PG_URL) return process.env.AGENTLOOP_TEST_PG_URL;
  const installed = existsSync("/usr/lib/postgresql") && readdirSync("/usr/lib/postgresql").length > 0;
  if (!installed) {
    notes.push("PostgreSQL skipped: set AGENTLOOP_TEST_PG_URL or install PostgreSQL (scripts/start-postgres.sh installs and starts one).");
    return undefined;
  }
  try {
    return execFileSync("bash", ["scripts/start-postgres.sh"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
  } catch (error) {
    notes.push(`PostgreSQL skipped: scripts/start-postgres.sh failed (${(error as Error).message.split("\n")[0]}).`);
    return undefined;
  }
}

async function storesUnderTest(notes: string[]): Promise<StoreUnderTest[]> {
  const stores: StoreUnderTest[] = [{ name: "in-process", open: async () => new InMemoryStore(limits), cleanup: async () => undefined }];
  const directory = mkdtempSync(join(tmpdir(), "agentloop-bench-embedded-"));
  const { openEmbeddedStore } = await import("../src/memory/embedded.js");
  stores.push({ name: "embedded (SQLite)", open: () => openEmbeddedStore({ ...limits, path: directory }), cleanup: async () => rmSync(directory, { recursive: true, force: true }) });
  const url = postgresUrl(notes);
  if (url) {
    const { openPostgresStore } = await import("../src/memory/postgres.js");
    const schema = `bench_${process.pid}`;
    stores.push({
      name: "PostgreSQL",
      open: () => openPostgresStore({ ...limits, url, schema }),
      async cleanup() {
        const pg = (await import("pg")).default;
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await client.end();
      },
    });
  }
  return stores;
}

interface StoreResult {
  singleAppendsPerSecond: number[];
  batchAppendsPerSecond: number[];
  loadMs: number[];
  historyMs: number[];
}

export async function runMemoryScenario(options: BenchOptions): Promise<ScenarioReport> {
  const machine = machineInfo();
  const notes: string[] = [];
  const stores = await storesUnderTest(notes);
  const singleEvents = options.quick ? 100 : 400;
  const rounds = options.quick ? 2 : 3;
  const loads = options.quick ? 2 : 5;
  const results = new Map<string, StoreResult>();
  for (const entry of stores) {
    const result: StoreResult = { singleAppendsPerSecond: [], batchAppendsPerSecond: [], loadMs: [], historyMs: [] };
    results.set(entry.name, result);
    const store = await entry.open();
    try {
      // Warm-up: the first statements of a store pay for planning and JIT.
      for (let index = 0; index < 50; index++) await store.append("warm-up", [eventAt(index)]);
      await store.events("warm-up");
      for (let round = 0; round < rounds; round++) {
        const session = `single-${round}`;
        const started = performance.now();
        for (let index = 0; index < singleEvents; index++) await store.append(session, [eventAt(index)]);
        result.singleAppendsPerSecond.push(singleEvents / ((performance.now() - started) / 1000));
      }
      // The 10,000-event session, written in batches of 100 (each batch is one sample).
      for (let offset = 0; offset < SESSION_EVENTS; offset += 100) {
        const batch = Array.from({ length: 100 }, (_, index) => eventAt(offset + index));
        const started = performance.now();
        await store.append("big", batch);
        result.batchAppendsPerSecond.push(100 / ((performance.now() - started) / 1000));
      }
      for (let round = 0; round < loads; round++) {
        let started = performance.now();
        const events = await store.events("big");
        result.loadMs.push(performance.now() - started);
        if (events.length !== SESSION_EVENTS || events[SESSION_EVENTS - 1].seq !== SESSION_EVENTS) {
          throw new Error(`${entry.name}: loaded ${events.length} events (last seq ${events.at(-1)?.seq}), expected ${SESSION_EVENTS}`);
        }
        started = performance.now();
        const history = historyFromEvents(await store.events("big"), { contextLimit: Number.POSITIVE_INFINITY });
        result.historyMs.push(performance.now() - started);
        // Each group of four events is a user message, an assistant tool call, its result and the answer.
        if (history.length !== SESSION_EVENTS) throw new Error(`${entry.name}: the history of ${SESSION_EVENTS} events has ${history.length} messages`);
      }
    } finally {
      await store.close();
      await entry.cleanup();
    }
  }
  // Summary: each durable store in the agentloop column, the in-process store as its floor.
  const reference = results.get("in-process")!;
  const summary = [...results.keys()]
    .filter((name) => name !== "in-process")
    .flatMap((name) => {
      const result = results.get(name)!;
      return [
        {
          scenario: "6 memory",
          metric: `${name}: events appended / s (one per append)`,
          values: { "raw-fetch": spread(reference.singleAppendsPerSecond).median, agentloop: spread(result.singleAppendsPerSecond).median },
        },
        {
          scenario: "6 memory",
          metric: `${name}: load ${SESSION_EVENTS.toLocaleString("en")}-event session ms`,
          values: { "raw-fetch": spread(reference.loadMs).median, agentloop: spread(result.loadMs).median },
        },
      ];
    });
  return {
    id: "memory",
    title: "6. Memory stores",
    machine,
    quick: options.quick,
    details: [
      markdownTable(
        ["store", "events/s, one per append", "events/s, batches of 100", `load ${SESSION_EVENTS} events ms`, "load + history projection ms"],
        [...results].map(([name, result]) => [
          name,
          formatSpread(spread(result.singleAppendsPerSecond), 0),
          formatSpread(spread(result.batchAppendsPerSecond), 0),
          formatSpread(spread(result.loadMs)),
          formatSpread(spread(result.historyMs)),
        ]),
      ),
    ],
    summary,
    notes: [
      ...notes,
      `Per store: ${rounds} rounds of ${singleEvents} single-event appends to a fresh session; a ${SESSION_EVENTS.toLocaleString("en")}-event session written in batches of 100 (each batch one sample); then ${loads} whole loads of it (the history projection loads it again and builds the messages).`,
      "The in-process store is the reference (raw-fetch column in the summary); embedded and PostgreSQL sit in the agentloop column. PostgreSQL runs locally with fsync off (scripts/start-postgres.sh).",
    ],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runMemoryScenario(options), options);
}

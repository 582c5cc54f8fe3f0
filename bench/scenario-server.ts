// Scenario 5: the agent server under 200 concurrent streaming chats, with the scripted model,
// against a bare node:http server that streams the same answer (the floor). Both run in child
// processes, so RSS and server CPU are their own; the load comes from this process.
import { mkdtempSync, rmSync } from "node:fs";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mainThreadCpuMs, memoryMb, processCpuMs, startChild } from "./child-process.js";
import {
  type BenchOptions,
  type ScenarioReport,
  format,
  formatSpread,
  isMain,
  machineInfo,
  markdownTable,
  parseBenchOptions,
  percentile,
  publish,
  spread,
} from "./harness.js";
import { CHAT_COMPLETIONS, PROTOCOLS, type Protocol, checkAnswer } from "./protocols.js";

const CONCURRENCY = 200;
/**
 * The unpaced event-loop cost phase: each server again, no delay between chunks, with this many
 * clients sending chats back to back; its main thread's CPU per request. Steadier than the paced
 * figure (which the p99 follows, bench/FINDINGS.md, session 11), and the part of it that does not
 * depend on pacing.
 */
const EVENT_LOOP_CLIENTS = 50;
const TARGET_ADDED_P99_MS = 20;
/** Both servers pace their stream like a model (40 chunks/s): chunk k of the answer's 21 is due k × this after the stream started. */
const CHUNK_DELAY_MS = 25;

interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  close(): Promise<void>;
}

const FLOOR = "node:http floor";
const AGENTLOOP = "agentloop serve";
const AGENTLOOP_NO_MEMORY = "agentloop serve, memory off";
const AGENTLOOP_EMBEDDED = "agentloop serve, embedded memory (the default store)";
const AGENTLOOP_POSTGRES = "agentloop serve, PostgreSQL memory";
/** Only when `BENCH_SERVERS` names it (`in-commit`): the embedded store with SQLite's own checkpoints, inside COMMIT. */
const AGENTLOOP_EMBEDDED_IN_COMMIT = "agentloop serve, SQLite file, checkpoints in-commit";
/** Only when `BENCH_SERVERS` names it (`on-thread`): the embedded store writing its group commits on the JavaScript thread. */
const AGENTLOOP_EMBEDDED_ON_THREAD = "agentloop serve, SQLite file, writes on-thread";
const TARGET_RSS_MB = 150;
/** The PostgreSQL of the postgres variant (`AGENTLOOP_TEST_PG_URL`); without it the variant is skipped. */
const POSTGRES_URL = process.env.AGENTLOOP_TEST_PG_URL;

async function spawnServer(name: string, chunkDelayMs: number): Promise<ServerProcess> {
  const env: Record<string, string> = { BENCH_CHUNK_DELAY_MS: String(chunkDelayMs) };
  let directory: string | undefined;
  if (name === AGENTLOOP_NO_MEMORY) env.BENCH_SERVER_MEMORY = "off";
  if (name === AGENTLOOP_EMBEDDED || name === AGENTLOOP_EMBEDDED_IN_COMMIT || name === AGENTLOOP_EMBEDDED_ON_THREAD) {
    directory = mkdtempSync(join(tmpdir(), "agentloop-bench-server-"));
    // A new folder: the store's file (memory.db) is created there, as `agentloop serve` does in a new project.
    Object.assign(env, { BENCH_SERVER_MEMORY: "embedded", BENCH_SERVER_MEMORY_PATH: directory });
    if (name === AGENTLOOP_EMBEDDED_IN_COMMIT) env.BENCH_SERVER_CHECKPOINTS = "in-commit";
    if (name === AGENTLOOP_EMBEDDED_ON_THREAD) env.BENCH_SERVER_WRITES = "on-thread";
  }
  let schema: string | undefined;
  if (name === AGENTLOOP_POSTGRES) {
    schema = `bench_server_${process.pid}_${Date.now()}`;
    Object.assign(env, { BENCH_SERVER_MEMORY: "postgres", BENCH_SERVER_POSTGRES_URL: POSTGRES_URL, BENCH_SERVER_POSTGRES_SCHEMA: schema });
  }
  const child = await startChild(name === FLOOR ? "./server-floor.ts" : "./server-agentloop.ts", [], env);
  return {
    name,
    url: `http://127.0.0.1:${child.port}`,
    pid: child.pid,
    async close() {
      await child.close();
      if (directory) rmSync(directory, { recursive: true, force: true });
      if (schema) await dropSchema(schema);
    },
  };
}

/**
 * The servers to measure: all, or the floor, agentloop serve and those whose names contain one of
 * the comma-separated words of `BENCH_SERVERS` (`BENCH_SERVERS=off` adds "memory off"; `none`
 * only the two), for quicker runs while working on one of them. `in-commit` adds the embedded
 * store with SQLite's own WAL checkpoints, `on-thread` the embedded store writing on the
 * JavaScript thread (never in a full run).
 */
async function dropSchema(schema: string): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

function serverNames(): string[] {
  const all = [FLOOR, AGENTLOOP, AGENTLOOP_NO_MEMORY, AGENTLOOP_EMBEDDED, ...(POSTGRES_URL ? [AGENTLOOP_POSTGRES] : [])];
  const filter = process.env.BENCH_SERVERS;
  if (!filter) return all;
  const words = filter.split(",").map((word) => word.trim()).filter((word) => word !== "");
  return [...all, AGENTLOOP_EMBEDDED_IN_COMMIT, AGENTLOOP_EMBEDDED_ON_THREAD].filter((name) => name === FLOOR || name === AGENTLOOP || words.some((word) => name.includes(word)));
}

let chatCount = 0;

/**
 * The load generator's HTTP client: node:http with keep-alive, one socket per client. It costs
 * ~0.6 ms CPU per chat against ~1.5 ms for `fetch` (web streams), and it shares the 2 cores with
 * the server it measures: a lighter client leaves the servers' own cost to show.
 */
function clientAgent(): HttpAgent {
  return new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
}

/** One chat's figures: request start to end of stream, and its last answer chunk to the end (the wait for the store's acknowledgement). */
interface ChatTimes {
  latency: number;
  tail: number;
}

/** One streaming chat: resolves with its times in ms after checking the streamed answer. */
function chat(url: URL, agent: HttpAgent, protocol: Protocol = CHAT_COMPLETIONS): Promise<ChatTimes> {
  const chatBody = protocol.body(chatCount++);
  return new Promise<ChatTimes>((resolve, reject) => {
    const started = performance.now();
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: protocol.path,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(chatBody) },
      },
      (response) => {
        response.setEncoding("utf8");
        let body = "";
        let lastContent = 0;
        response.on("data", (chunk: string) => {
          body += chunk;
          // A piece that holds answer text (the role chunk's content is empty).
          if (chunk.includes('"content":"') && !chunk.includes('"content":""')) lastContent = performance.now();
        });
        response.on("error", reject);
        response.on("end", () => {
          const ended = performance.now();
          const latency = ended - started;
          try {
            checkAnswer(protocol, response.statusCode, body, String(url));
            resolve({ latency, tail: ended - lastContent });
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    request.on("error", reject);
    request.end(chatBody);
  });
}

interface Round {
  latencies: number[];
  /** Each chat's last answer chunk to its end of stream. */
  tails: number[];
  requestsPerSecond: number;
  peakRssMb: number;
  cpuMsPerRequest: number;
  /** The server's main-thread CPU per chat in µs, paced: every chunk its own timer and socket write, every stream's state alive for its whole answer. */
  eventLoopUsPerRequest: number;
}

/** `CONCURRENCY` clients, each sending `perClient` chats back to back. */
async function loadRound(server: ServerProcess, perClient: number): Promise<Round> {
  const latencies: number[] = [];
  const tails: number[] = [];
  let peakRssMb = memoryMb(server.pid, "VmRSS");
  const sampler = setInterval(() => {
    peakRssMb = Math.max(peakRssMb, memoryMb(server.pid, "VmRSS"));
  }, 25);
  const url = new URL(server.url);
  const agent = clientAgent();
  const cpuStart = processCpuMs(server.pid);
  const mainStart = mainThreadCpuMs(server.pid);
  const started = performance.now();
  try {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let index = 0; index < perClient; index++) {
          const times = await chat(url, agent);
          latencies.push(times.latency);
          tails.push(times.tail);
        }
      }),
    );
  } finally {
    clearInterval(sampler);
    agent.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  const requests = CONCURRENCY * perClient;
  return {
    latencies,
    tails,
    requestsPerSecond: requests / seconds,
    peakRssMb,
    cpuMsPerRequest: (processCpuMs(server.pid) - cpuStart) / requests,
    eventLoopUsPerRequest: ((mainThreadCpuMs(server.pid) - mainStart) * 1000) / requests,
  };
}

/** `rounds` rounds over `servers`, the order rotating each round, so no server always runs right after the same one. */
async function inRotation(servers: readonly ServerProcess[], rounds: number, measure: (server: ServerProcess) => Promise<void>): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (let offset = 0; offset < servers.length; offset++) await measure(servers[(round + offset) % servers.length]);
  }
}

/** `requests` chats from `EVENT_LOOP_CLIENTS` clients back to back; the server's main-thread CPU per request in µs. */
async function eventLoopRound(server: ServerProcess, requests: number, protocol: Protocol = CHAT_COMPLETIONS): Promise<number> {
  const url = new URL(server.url);
  const agent = new HttpAgent({ keepAlive: true, maxSockets: EVENT_LOOP_CLIENTS });
  let left = requests;
  const cpuStart = mainThreadCpuMs(server.pid);
  try {
    await Promise.all(
      Array.from({ length: EVENT_LOOP_CLIENTS }, async () => {
        while (left-- > 0) await chat(url, agent, protocol);
      }),
    );
  } finally {
    agent.destroy();
  }
  return ((mainThreadCpuMs(server.pid) - cpuStart) * 1000) / requests;
}

/**
 * Every server once more, unpaced: a warm-up, then rounds in rotating order; per server the median
 * (min–max) of its event-loop CPU per request.
 */
async function eventLoopCost(options: BenchOptions): Promise<Map<string, ReturnType<typeof spread>>> {
  const servers: ServerProcess[] = [];
  const perRound = options.quick ? 1000 : 3000;
  const rounds = options.quick ? 1 : 3;
  const samples = new Map<string, number[]>(serverNames().map((name) => [name, []]));
  try {
    for (const name of samples.keys()) servers.push(await spawnServer(name, 0));
    for (const server of servers) await eventLoopRound(server, perRound);
    await inRotation(servers, rounds, async (server) => {
      samples.get(server.name)!.push(await eventLoopRound(server, perRound));
    });
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
  return new Map([...samples].map(([name, list]) => [name, spread(list)]));
}

/**
 * The protocol rows (issue 29): the same chats through chat completions, the AI SDK UI message
 * stream (`/api/chat`) and AG-UI (`/ag-ui`) to one agent server each of the variants that
 * `BENCH_PROTOCOLS` names (`off`, `embedded`; `1` = `off`), unpaced like `eventLoopCost`: a
 * warm-up per protocol, then rounds with the protocols in rotating order on the same server. Per
 * protocol its event-loop CPU µs per chat, and its ratio to chat completions round by round.
 */
async function runProtocolRows(options: BenchOptions, filter: string): Promise<ScenarioReport> {
  const machine = machineInfo();
  const words = filter === "1" ? ["off"] : filter.split(",").map((word) => word.trim());
  const names = [AGENTLOOP_NO_MEMORY, AGENTLOOP_EMBEDDED].filter((name) => words.some((word) => name.includes(word)));
  const perRound = options.quick ? 1000 : 3000;
  const rounds = options.quick ? 1 : 3;
  const rows: string[][] = [];
  const summary: ScenarioReport["summary"] = [];
  for (const name of names) {
    const server = await spawnServer(name, 0);
    const samples = new Map<Protocol, number[]>(PROTOCOLS.map((protocol) => [protocol, []]));
    try {
      for (const protocol of PROTOCOLS) await eventLoopRound(server, perRound, protocol);
      for (let round = 0; round < rounds; round++) {
        for (let offset = 0; offset < PROTOCOLS.length; offset++) {
          const protocol = PROTOCOLS[(round + offset) % PROTOCOLS.length];
          samples.get(protocol)!.push(await eventLoopRound(server, perRound, protocol));
        }
      }
    } finally {
      await server.close();
    }
    const base = samples.get(CHAT_COMPLETIONS)!;
    for (const protocol of PROTOCOLS) {
      const list = samples.get(protocol)!;
      const ratio = spread(list.map((value, index) => value / base[index]));
      rows.push([name, protocol.name, formatSpread(spread(list)), protocol === CHAT_COMPLETIONS ? "1" : formatSpread(ratio, 2)]);
      if (protocol !== CHAT_COMPLETIONS) {
        summary.push({
          scenario: "5 server",
          metric: `event-loop CPU µs / request, unpaced, ${protocol.name} (${name.replace("agentloop serve, ", "")})`,
          values: { "chat-completions": spread(base).median, agentloop: spread(list).median },
          // Reported: the target (≤ 1.1× chat completions) is counted in instructions, scenario 10.
          target: "reported (target: scenario 10)",
          met: undefined,
        });
      }
    }
  }
  return {
    id: "server",
    title: "5. Server: event-loop CPU per chat by protocol",
    machine,
    quick: options.quick,
    details: [markdownTable(["server", "protocol", "event-loop CPU µs / request, unpaced", "÷ chat completions (round by round)"], rows)],
    summary,
    notes: [
      `Unpaced (no delay between chunks), ${EVENT_LOOP_CLIENTS} clients sending chats back to back; per server a warm-up of ${perRound} chats per protocol, then ${rounds} round(s) of ${perRound} chats per protocol in rotating order on the same server process. Each chat is a new session (\`id\` / \`threadId\`), its SSE stream read to its end and its answer checked. \`/api/chat\` gets the body \`useChat\` sends for a new chat, \`/ag-ui\` a RunAgentInput.`,
    ],
  };
}

export async function runServerScenario(options: BenchOptions): Promise<ScenarioReport> {
  const protocolsOnly = process.env.BENCH_PROTOCOLS;
  if (protocolsOnly) return runProtocolRows(options, protocolsOnly);
  const machine = machineInfo();
  const servers: ServerProcess[] = [];
  for (const name of serverNames()) servers.push(await spawnServer(name, CHUNK_DELAY_MS));
  const rounds = new Map<string, Round[]>(servers.map((server) => [server.name, []]));
  const idleRss = new Map<string, number>();
  const perClient = options.quick ? 2 : 4;
  const measuredRounds = options.quick ? 1 : 7;
  const warmUpRounds = options.quick ? 1 : 2;
  try {
    for (const server of servers) {
      idleRss.set(server.name, memoryMb(server.pid, "VmRSS"));
      // Warm-up: a long-running server's code is optimized; the first few hundred requests of a
      // fresh process run partly unoptimized, and more so for a larger program than the floor.
      for (let round = 0; round < warmUpRounds; round++) await loadRound(server, perClient);
    }
    await inRotation(servers, measuredRounds, async (server) => {
      rounds.get(server.name)!.push(await loadRound(server, perClient));
    });
  } finally {
    await Promise.all(servers.map((server) => server.close()));
  }
  const eventLoop = await eventLoopCost(options);
  // Each round is one repetition: its p50 and p99, then the median over the rounds (with the
  // min–max spread), like every other scenario's figures. Pooling all rounds' latencies instead
  // lets one disturbed round (a noisy neighbour on the machine) set the p99 alone; it is shown too.
  const summaryOf = (name: string) => {
    const list = rounds.get(name)!;
    const latencies = list.flatMap((round) => round.latencies);
    return {
      rps: spread(list.map((round) => round.requestsPerSecond)),
      p50: spread(list.map((round) => percentile(round.latencies, 0.5))),
      p99: spread(list.map((round) => percentile(round.latencies, 0.99))),
      pooledP99: percentile(latencies, 0.99),
      peakRss: Math.max(idleRss.get(name)!, ...list.map((round) => round.peakRssMb)),
      cpu: spread(list.map((round) => round.cpuMsPerRequest)),
      eventLoop: spread(list.map((round) => round.eventLoopUsPerRequest)),
      tailP50: spread(list.map((round) => percentile(round.tails, 0.5))),
      tailP99: spread(list.map((round) => percentile(round.tails, 0.99))),
    };
  };
  /** Round k of `name` minus round k of the floor (they ran back to back), then the median. */
  const addedOver = (name: string, fraction: number) => {
    const floorRounds = rounds.get(FLOOR)!;
    return spread(rounds.get(name)!.map((round, index) => percentile(round.latencies, fraction) - percentile(floorRounds[index].latencies, fraction)));
  };
  const floor = summaryOf(FLOOR);
  const agent = summaryOf(AGENTLOOP);
  /** A server's CPU rows beside the floor's: the whole process, and its event loop paced and unpaced. */
  const cpuRows = (name: string, suffix: string): ScenarioReport["summary"] => {
    const result = name === AGENTLOOP ? agent : summaryOf(name);
    return [
      { scenario: "5 server", metric: `server CPU ms / request${suffix}`, values: { "raw-fetch": floor.cpu.median, agentloop: result.cpu.median } },
      { scenario: "5 server", metric: `event-loop CPU µs / request, paced${suffix}`, values: { "raw-fetch": floor.eventLoop.median, agentloop: result.eventLoop.median } },
      { scenario: "5 server", metric: `event-loop CPU µs / request, unpaced${suffix}`, values: { "raw-fetch": eventLoop.get(FLOOR)!.median, agentloop: eventLoop.get(name)!.median } },
    ];
  };
  // The stores' own rows: the default embedded store and PostgreSQL, each against the same target.
  const storeRows = [
    [AGENTLOOP_EMBEDDED, "embedded (default store)"],
    [AGENTLOOP_POSTGRES, "PostgreSQL"],
  ]
    .filter(([name]) => rounds.has(name))
    .flatMap(([name, label]) => {
      const addedStore = addedOver(name, 0.99).median;
      const rows: ScenarioReport["summary"] = [
        {
          scenario: "5 server",
          metric: `p99 added latency ms, ${label} (− floor)`,
          values: { agentloop: addedStore },
          // Reported, not a target on 2 shared cores (issue 33): scenario 10 is the repeatable measure.
          target: `reported (was < ${TARGET_ADDED_P99_MS} ms)`,
        },
        ...cpuRows(name, `, ${label}`),
      ];
      if (name === AGENTLOOP_EMBEDDED || name === AGENTLOOP_EMBEDDED_IN_COMMIT) {
        const peak = summaryOf(name).peakRss;
        rows.push({
          scenario: "5 server",
          metric: `peak RSS MB over 200 concurrent streams, ${label}`,
          values: { "raw-fetch": floor.peakRss, agentloop: peak },
          target: `< ${TARGET_RSS_MB} MB`,
          met: peak < TARGET_RSS_MB,
        });
      }
      return rows;
    });
  const addedP50 = addedOver(AGENTLOOP, 0.5);
  const added = addedOver(AGENTLOOP, 0.99);
  const addedP99 = added.median;
  return {
    id: "server",
    title: `5. Server: ${CONCURRENCY} concurrent streaming chats`,
    machine,
    quick: options.quick,
    details: [
      markdownTable(
        ["server", "requests/s", "p50 ms", "p99 ms", "p99 added ms", "pooled p99 ms", "last chunk → end p50 / p99 ms", "server CPU ms / request", "event-loop CPU µs / request, paced", "event-loop CPU µs / request, unpaced", "RSS idle MB", "RSS peak MB"],
        servers.map((server) => {
          const result = summaryOf(server.name);
          return [
            server.name,
            formatSpread(result.rps, 0),
            formatSpread(result.p50),
            formatSpread(result.p99),
            server.name === FLOOR ? "" : formatSpread(addedOver(server.name, 0.99)),
            format(result.pooledP99),
            `${format(result.tailP50.median)} / ${format(result.tailP99.median)}`,
            formatSpread(result.cpu),
            formatSpread(result.eventLoop, 0),
            formatSpread(eventLoop.get(server.name)!),
            format(idleRss.get(server.name)!),
            format(result.peakRss),
          ];
        }),
      ),
      `Added latency (agentloop − floor, round by round, median over ${measuredRounds} rounds): p50 ${format(addedP50.median)} ms, p99 ${formatSpread(added)} ms (target < ${TARGET_ADDED_P99_MS} ms); all rounds pooled: p99 ${format(agent.pooledP99 - floor.pooledP99)} ms.`,
    ],
    summary: [
      { scenario: "5 server", metric: "requests / s", values: { "raw-fetch": floor.rps.median, agentloop: agent.rps.median } },
      { scenario: "5 server", metric: "p50 latency ms", values: { "raw-fetch": floor.p50.median, agentloop: agent.p50.median } },
      { scenario: "5 server", metric: "p99 latency ms", values: { "raw-fetch": floor.p99.median, agentloop: agent.p99.median } },
      {
        scenario: "5 server",
        metric: "p99 added latency ms (agentloop − floor)",
        values: { agentloop: addedP99 },
        target: `reported (was < ${TARGET_ADDED_P99_MS} ms)`,
      },
      ...cpuRows(AGENTLOOP, ""),
      { scenario: "5 server", metric: "peak RSS MB", values: { "raw-fetch": floor.peakRss, agentloop: agent.peakRss } },
      ...storeRows,
    ],
    notes: [
      `${CONCURRENCY} clients each send ${perClient} streaming chats back to back (${measuredRounds} rounds per server, in rotating order, after ${warmUpRounds} warm-up rounds of the same size per server); latency is request start to the end of the stream, checked against the scripted answer. Each round is a repetition: p50 and p99 are per round, then the median (min–max) over the rounds; the added latency is agentloop's round minus the floor's round of the same cycle, then the median. "Last chunk → end": from the arrival of a chat's last answer text to the end of its stream (the finish chunk and [DONE] go out once the run's events are stored), p50 and p99 per round, then the median over rounds: what waiting for the store's acknowledgement costs.`,
      `agentloop serve: \`startAgentServer\` on the scripted model (one answer of 21 word chunks, chunk k due k × ${CHUNK_DELAY_MS} ms after the stream started, like a model's token stream: time spent on a chunk does not push the later ones back) with the in-process memory store (memory stores: scenario 6); the "memory off" variant records nothing, to show what recording costs; the "embedded" variant uses the store \`agentloop serve\` defaults to (a SQLite file created in a new temporary folder); the "PostgreSQL" variant a schema of its own on \`AGENTLOOP_TEST_PG_URL\` (skipped without it). Floor: node:http parsing the body and streaming the same chunks with the same pacing (the same deadlines). In the summary the floor sits in the raw-fetch column.`,
      `"Event-loop CPU µs / request": the CPU of the server's main thread (its JavaScript thread; /proc schedstat, in ns) per chat, median (min–max) over rounds. What a request costs the event loop, which every other request waits on: at a wave's start and end 200 requests' work queues, and the added p99 grows ~0.17 ms per µs of it (bench/FINDINGS.md, sessions 10–11). "Paced": in the rounds above, where every chunk is a timer and a socket write of its own (each write wakes the client) and every stream's objects live through its whole answer (young collections copy them): the cost the p99 follows. "Unpaced": each server started again without pacing (chunks as fast as they come, one socket write per chat), ${EVENT_LOOP_CLIENTS} clients sending chats back to back (${options.quick ? "1 round of 1,000 chats" : "3 rounds of 3,000 chats, rotating order"}, after a warm-up of the same size): steadier, and the part of the cost that does not depend on pacing (setup, stores, the loop's per-event work).`,
      "Both servers run as bundled JavaScript (esbuild) without a TypeScript loader, so RSS is the server's own.",
      "The load generator (node:http with keep-alive, a new pool of 200 connections per round) shares the 2 cores with the server, so absolute latencies include client time; the added latency compares like with like. The clients start together, so the first request of each waits behind the others' setup: that first wave holds the p99.",
    ],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runServerScenario(options), options);
}

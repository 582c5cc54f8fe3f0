import { type Command, Option } from "commander";
import { AgentLoopError } from "../../errors.js";
import type { MemoryEvent, SessionInfo } from "../../memory/index.js";
import { openCliStore } from "../agent-setup.js";
import { type Palette, palette } from "../render.js";

/** Where a command writes, and the environment it reads (`MEMORY_*`); default: the process's. */
export interface CommandIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env?: NodeJS.ProcessEnv;
}

const positive = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new AgentLoopError("configuration", `${name} must be a positive integer, got "${value}"`);
  return Number(value);
};

function shortTime(iso: string): string {
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** `agentloop sessions`: the sessions of the store, most recently updated last. */
export async function sessionsCommand(options: { agent?: string; limit?: number; json?: boolean }, io: CommandIO = process): Promise<number> {
  const store = await openCliStore(options.agent, io.env);
  try {
    const sessions = await store.listSessions({ limit: options.limit });
    if (options.json) {
      io.stdout.write(`${JSON.stringify({ sessions: sessions.map(({ last_seq: _seq, ...session }) => session), total: sessions.length })}\n`);
      return 0;
    }
    const c = palette(io.stdout);
    if (sessions.length === 0) {
      io.stdout.write(`${c.dim("no sessions yet")}\n`);
      return 0;
    }
    const width = Math.max(10, ...sessions.map((session) => session.session_id.length));
    io.stdout.write(`${c.bold(`${"SESSION".padEnd(width)}  EVENTS  UPDATED`)}\n`);
    for (const session of sessions as SessionInfo[]) {
      io.stdout.write(`${session.session_id.padEnd(width)}  ${String(session.event_count).padStart(6)}  ${c.dim(shortTime(session.updated_at))}\n`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

function contentPreview(event: MemoryEvent, max = 100): string {
  const content = event.content as Record<string, unknown> | string | undefined;
  let text: string;
  if (typeof content === "string") text = content;
  else if (content && typeof content === "object" && "tool" in content && "arguments" in content) text = `${content.tool}(${JSON.stringify(content.arguments)})`;
  else if (content && typeof content === "object" && "tool" in content && "result" in content) text = `${content.tool} → ${typeof content.result === "string" ? content.result : JSON.stringify(content.result)}`;
  else text = JSON.stringify(content ?? "");
  const line = text.replace(/\s+/g, " ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function typeColor(c: Palette, type: string): (text: string) => string {
  if (type === "user_message") return c.cyan;
  if (type === "agent_response") return c.green;
  if (type === "error") return c.red;
  if (type.startsWith("run_")) return c.dim;
  return c.yellow;
}

/** How often `events --follow` asks the store for new events. */
const FOLLOW_POLL_MS = 200;

export interface EventsOptions {
  agent?: string;
  limit?: number;
  json?: boolean;
  /** Keep printing events as they are stored (until `signal` aborts, or SIGINT/SIGTERM). */
  follow?: boolean;
}

/**
 * `agentloop events SESSION`: one line per event, or the KAOS JSON shape with `--json`. With
 * `--follow`, new events are printed as they are stored, by any process (JSON lines with `--json`),
 * and a session that does not exist yet is waited for.
 */
export async function eventsCommand(sessionId: string, options: EventsOptions, io: CommandIO & { signal?: AbortSignal } = process): Promise<number> {
  const store = await openCliStore(options.agent, io.env);
  try {
    if (!options.follow && !(await store.getSession(sessionId))) {
      io.stderr.write(`agentloop: session "${sessionId}" not found (list them with: agentloop sessions)\n`);
      return 1;
    }
    const events = await store.events(sessionId, { limit: options.limit });
    const { eventView } = await import("../../server/memory.js");
    const c = palette(io.stdout);
    const line = (event: MemoryEvent) => {
      if (options.json) return `${JSON.stringify(eventView(event))}\n`;
      const time = event.timestamp.slice(11, 19);
      return `${c.dim(time)}  ${typeColor(c, event.event_type)(event.event_type.padEnd(24))} ${contentPreview(event)}\n`;
    };
    if (!options.follow) {
      if (options.json) {
        // The events as the server's GET /memory/events gives them (KAOS's five fields).
        const shaped = events.map(eventView);
        io.stdout.write(`${JSON.stringify({ session_id: sessionId, events: shaped, total: shaped.length })}\n`);
      } else for (const event of events) io.stdout.write(line(event));
      return 0;
    }
    const stop = followSignal(io.signal);
    let last = 0;
    let batch = events;
    while (!stop.signal.aborted) {
      for (const event of batch) io.stdout.write(line(event));
      if (batch.length > 0) last = batch[batch.length - 1].seq;
      await new Promise<void>((resolve) => {
        const onAbort = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          stop.signal.removeEventListener("abort", onAbort);
          resolve();
        }, FOLLOW_POLL_MS);
        stop.signal.addEventListener("abort", onAbort, { once: true });
      });
      if (!stop.signal.aborted) batch = await store.events(sessionId, { afterSeq: last });
    }
    stop.dispose();
    return 0;
  } finally {
    await store.close();
  }
}

/** Stops `--follow` on the given signal, or on SIGINT/SIGTERM when none is given. */
function followSignal(signal: AbortSignal | undefined): { signal: AbortSignal; dispose(): void } {
  if (signal) return { signal, dispose: () => {} };
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    },
  };
}

export function registerSessionsCommand(program: Command): void {
  const sessions = program
    .command("sessions")
    .description("List the sessions in the memory store (the same store `agentloop serve` writes)")
    .option("-a, --agent <file>", "agent file whose memory settings to use (else MEMORY_* variables)")
    .addOption(new Option("-n, --limit <n>", "only the most recently updated n sessions").argParser(positive("--limit")))
    .option("--json", "print {sessions:[{session_id, created_at, updated_at, event_count, metadata}], total} on stdout")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop sessions
  $ agentloop sessions --limit 5
  $ MEMORY_TYPE=postgres MEMORY_POSTGRES_URL=postgres://localhost/agents agentloop sessions --json | jq -r '.sessions[].session_id'`,
    )
    .action(async (options: { agent?: string; limit?: number; json?: boolean }) => {
      process.exitCode = await sessionsCommand(options);
    });
  sessions
    .command("export")
    .description("Write sessions' events as JSON lines (one event a line), to move them to another store")
    .argument("[session...]", "only these sessions (default: all)")
    .option("-a, --agent <file>", "agent file whose memory settings to use (else MEMORY_* variables)")
    .option("-o, --output <file>", "write to this file instead of stdout")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop sessions export > sessions.jsonl
  $ MEMORY_TYPE=postgres MEMORY_POSTGRES_URL=postgres://localhost/agents agentloop sessions import sessions.jsonl`,
    )
    .action(async (sessionIds: string[], options: { agent?: string; output?: string }) => {
      const { exportSessionsCommand } = await import("./sessions-transfer.js");
      process.exitCode = await exportSessionsCommand(sessionIds, options);
    });
  sessions
    .command("import")
    .description("Append the events of an export (JSON lines) to the store; events already there (same event_id) are skipped")
    .argument("[file]", "the JSON lines file (default: stdin)")
    .option("-a, --agent <file>", "agent file whose memory settings to use (else MEMORY_* variables)")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop sessions import sessions.jsonl
  $ agentloop sessions export s1 | AGENT_NAME=worker agentloop sessions import

Exit codes: 0 imported, 1 bad input (a line is named; nothing imported), 2 bad configuration.`,
    )
    .action(async (file: string | undefined, options: { agent?: string }) => {
      const { importSessionsCommand } = await import("./sessions-transfer.js");
      process.exitCode = await importSessionsCommand(file, options);
    });
}

export function registerEventsCommand(program: Command): void {
  program
    .command("events")
    .description("Show a session's event log: user messages, tool calls and results, delegations, answers")
    .argument("<session>", "session id (see `agentloop sessions`)")
    .option("-a, --agent <file>", "agent file whose memory settings to use (else MEMORY_* variables)")
    .addOption(new Option("-n, --limit <n>", "only the last n events").argParser(positive("--limit")))
    .option("--json", "print the KAOS shape {session_id, events:[{event_id, timestamp, event_type, content, metadata}], total}")
    .option("-f, --follow", "keep printing new events as any process stores them (JSON lines with --json), until Ctrl-C")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop events chat_1a2b3c4d
  $ agentloop events s1 --limit 20
  $ agentloop events s1 --json | jq -r '.events[].event_type'
  $ agentloop events s1 --follow

Exit codes: 0 shown, 1 unknown session, 2 bad configuration.`,
    )
    .action(async (sessionId: string, options: EventsOptions) => {
      process.exitCode = await eventsCommand(sessionId, options);
    });
}

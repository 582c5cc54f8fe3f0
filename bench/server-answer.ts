// Shared by the two servers of scenario 5 (each a child process: server-floor.ts, server-agentloop.ts).

/** The scripted answer both servers stream, one chunk per word. */
export const SERVER_ANSWER = "Availability is open for both date ranges you asked about, and the rooms are held for ten minutes while you decide.";

/** Milliseconds before each streamed chunk, like a model streaming (`BENCH_CHUNK_DELAY_MS`, default 0). */
export const chunkDelayMs = Number(process.env.BENCH_CHUNK_DELAY_MS ?? 0);

/** Word-sized chunks that join back to the text (the scripted model's split). */
export function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? [text];
}

/** Announces the port (and the pid: under valgrind the child's pid is not the spawned one's) to the parent; exits when the parent closes our stdin (or goes away). */
export function announce(port: number): void {
  process.stdout.write(`listening on ${port} pid ${process.pid}\n`);
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}

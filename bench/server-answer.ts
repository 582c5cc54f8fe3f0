// Shared by the two servers of scenario 5 (each a child process: server-floor.ts, server-agentloop.ts).

/** The scripted answer both servers stream, one chunk per word. */
export const SERVER_ANSWER = "Availability is open for both date ranges you asked about, and the rooms are held for ten minutes while you decide.";

/** Milliseconds before each streamed chunk, like a model streaming (`BENCH_CHUNK_DELAY_MS`, default 0). */
export const chunkDelayMs = Number(process.env.BENCH_CHUNK_DELAY_MS ?? 0);

/** Word-sized chunks that join back to the text (the scripted model's split). */
export function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? [text];
}

/**
 * Announces the port (and the pid: under valgrind the child's pid is not the spawned one's) to the
 * parent; exits when the parent closes our stdin (or goes away). A line `gc` on stdin, in a child
 * started with `--expose-gc`, runs a full collection and answers `gc done` (scenario 10 runs one
 * just before its counted chats: bench code, no route of the server).
 */
export function announce(port: number): void {
  process.stdout.write(`listening on ${port} pid ${process.pid}\n`);
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (data: string) => {
    if (!data.split("\n").includes("gc")) return;
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) {
      process.stdout.write("gc unavailable (start with --expose-gc)\n");
      return;
    }
    gc();
    process.stdout.write("gc done\n");
  });
}

// `startAgentServer({ handleSignals: true })` in a process of its own, for test/server/mutation-signals.test.ts:
// no `log` option (its lines go to stderr, as the CLI's do), a model that holds its answer until the
// run is aborted, and a `beforeExit` that BEFORE_EXIT makes resolve ("ok"), reject ("fail") or never
// settle ("hang"), or none ("none"). STORE_CLOSE_FAILS=1: closing its memory store rejects (as a
// store whose database went away). Prints "listening <url>", "model reached" and "before exit" on stdout.
import { InMemoryStore } from "../../src/memory/index.js";
import { startAgentServer } from "../../src/server/index.js";
import { heldModel } from "./helpers.js";

const mode = process.env.BEFORE_EXIT ?? "ok";
if (process.env.STORE_CLOSE_FAILS === "1") {
  InMemoryStore.prototype.close = async () => {
    throw new Error("the database went away");
  };
}
const held = heldModel();
void held.reached.then(() => process.stdout.write("model reached\n"));
const server = await startAgentServer({
  env: { AGENT_NAME: "signals", MEMORY_TYPE: "memory" },
  build: { model: held.model },
  host: "127.0.0.1",
  port: 0,
  shutdownGraceMs: 600_000,
  // HANDLE_SIGNALS=no: an embedder that did not ask for them (the process's own signal handling stays).
  handleSignals: process.env.HANDLE_SIGNALS !== "no",
  ...(mode === "none"
    ? {}
    : {
        beforeExit: async () => {
          process.stdout.write("before exit\n");
          if (mode === "fail") throw new Error("trace flush failed");
          if (mode === "hang") await new Promise(() => setInterval(() => {}, 60_000));
        },
      }),
});
process.stdout.write(`listening ${server.url}\n`);
// A test process that dies (a mutation run's timeout) leaves no server behind: its pipe closes.
process.stdin.on("end", () => process.exit(1));
process.stdin.resume();

// Runs contestants each in a process of its own, still alternating round by round.
//
// Why: libraries change the process they run in for everybody after them. Measured on scenario 1:
// with `@openai/agents` in the rotation, the raw fetch floor's CPU per model call went from ~0.72
// to ~1.19 ms and agentloop's from ~0.56 to ~0.79, with no other change (a forced GC and a settle
// pause before every run did not help; AsyncLocalStorage, bytecode flushing and V8's protectors were
// ruled out). In a process of its own each contestant runs as it would in an application.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { benchFile, bundle } from "./child-process.js";
import type { Entrant, Sample } from "./harness.js";

/** What a worker needs to build one contestant's conversation. */
export interface WorkerSetup {
  contestant: string;
  baseURL: string;
  model: string;
  stream: boolean;
  maxTurns: number;
  /** Tool calls one conversation must make, and its final text: checked on every run. */
  toolCalls: number;
  finalText: string;
  /** Conversations per measured sample (back to back, no forced GC between or before them). */
  batch: number;
  /** The earlier method instead: a forced full GC (and a 5 ms pause) before each sample. */
  forcedGc?: boolean;
  /** The node binary to run the worker with (default: this process's). */
  node?: string;
}

export interface IsolatedEntrant extends Entrant {
  /** The worker's node version and the peers' versions it loads. */
  describe(): Promise<string>;
  close(): Promise<void>;
}

/** Starts a worker process for `setup.contestant` and prepares its conversation. */
export async function isolatedEntrant(setup: WorkerSetup): Promise<IsolatedEntrant> {
  // Plain JavaScript, as a user runs the compiled package: under tsx, our TypeScript (not the
  // peers' JavaScript) would also carry its loader's helpers (`__name` on every function made).
  const worker = await bundle(benchFile("contestant-worker.ts"));
  const child: ChildProcess = spawn(setup.node ?? process.execPath, ["--expose-gc", worker], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const exited = new Promise<never>((_resolve, reject) => child.once("exit", (code) => reject(new Error(`${setup.contestant}: worker exited (${code})`))));
  exited.catch(() => undefined);
  const ask = async (message: unknown): Promise<any> => {
    child.stdin!.write(`${JSON.stringify(message)}\n`);
    const line = await Promise.race([lines.next(), exited]);
    if (line.done) throw new Error(`${setup.contestant}: worker closed its output`);
    const reply = JSON.parse(line.value) as { error?: string };
    if (reply.error) throw new Error(reply.error);
    return reply;
  };
  await ask({ prepare: setup });
  return {
    name: setup.contestant,
    run: async () => {
      await ask({ run: true });
    },
    measured: async () => (await ask({ run: true })) as Sample,
    describe: async () => ((await ask({ describe: true })) as { described: string }).described,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.stdin!.end();
      }),
  };
}

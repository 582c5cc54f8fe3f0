// One contestant in a process of its own (see isolated.ts). Reads one JSON request per line on
// stdin and answers one JSON line: `{"prepare": WorkerSetup}` → `{}`; `{"run": true}` → one measured
// sample `{ wallMs, cpuMs }`: `setup.batch` conversations back to back, or `{ error }`;
// `{"describe": true}` → `{ described }`, its node and peer versions. Exits when stdin closes.
//
// No forced GC before a sample: the process holds this contestant's garbage only, so the
// collections its own allocations cause are its cost, and a batch of conversations takes its share
// of them. (A forced full GC before every sample walks the whole heap and leaves the CPU caches
// cold for the run that follows: that penalty, not the contestant's work, was up to 40% of a
// small framework's figure.)
import { createInterface } from "node:readline";
import { type Conversation, loopContestants, lookupTool, peerVersions } from "./contestants.js";
import { collectGarbage, measure } from "./harness.js";
import type { WorkerSetup } from "./isolated.js";

let conversation: Conversation | undefined;
let setup: WorkerSetup | undefined;
let toolCalls = 0;

async function handle(request: { prepare?: WorkerSetup; run?: boolean; describe?: boolean }): Promise<unknown> {
  if (request.describe) return { described: `node ${process.version}, ${peerVersions()}` };
  if (request.prepare) {
    setup = request.prepare;
    const contestant = loopContestants.find((entry) => entry.name === setup!.contestant);
    if (!contestant) throw new Error(`no contestant named ${setup.contestant}`);
    const tool = lookupTool((args) => {
      toolCalls++;
      return `value ${args.n}.${args.i}`;
    });
    conversation = await contestant.prepare({ baseURL: setup.baseURL, model: setup.model, stream: setup.stream, maxTurns: setup.maxTurns, tool });
    return {};
  }
  if (!conversation || !setup) throw new Error("run before prepare");
  const { contestant, finalText, batch } = setup;
  const play = conversation;
  const texts: string[] = [];
  if (setup.forcedGc) {
    collectGarbage();
    // Let the collector's background sweeping finish before the clock starts.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  toolCalls = 0;
  const sample = await measure(async () => {
    for (let index = 0; index < batch; index++) texts.push(await play());
  });
  for (const text of texts) if (text !== finalText) throw new Error(`${contestant}: wrong final text ${JSON.stringify(text)}`);
  if (toolCalls !== setup.toolCalls * batch) throw new Error(`${contestant}: ${toolCalls} tool calls in ${batch} conversations, expected ${setup.toolCalls} each`);
  return sample;
}

for await (const line of createInterface({ input: process.stdin })) {
  let reply: unknown;
  try {
    reply = await handle(JSON.parse(line));
  } catch (error) {
    reply = { error: error instanceof Error ? error.message : String(error) };
  }
  process.stdout.write(`${JSON.stringify(reply)}\n`);
}

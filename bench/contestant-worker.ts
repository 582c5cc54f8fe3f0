// One contestant in a process of its own (see isolated.ts). Reads one JSON request per line on
// stdin and answers one JSON line: `{"prepare": WorkerSetup}` → `{}`; `{"run": true}` → a measured
// run `{ wallMs, cpuMs }` after a forced GC, or `{ error }`. Exits when stdin closes.
import { createInterface } from "node:readline";
import { allContestants, type Conversation, lookupTool } from "./contestants.js";
import { collectGarbage, measure } from "./harness.js";
import type { WorkerSetup } from "./isolated.js";

let conversation: Conversation | undefined;
let setup: WorkerSetup | undefined;
let toolCalls = 0;

async function handle(request: { prepare?: WorkerSetup; run?: boolean }): Promise<unknown> {
  if (request.prepare) {
    setup = request.prepare;
    const contestant = allContestants.find((entry) => entry.name === setup!.contestant);
    if (!contestant) throw new Error(`no contestant named ${setup.contestant}`);
    const tool = lookupTool((args) => {
      toolCalls++;
      return `value ${args.n}.${args.i}`;
    });
    conversation = await contestant.prepare({ baseURL: setup.baseURL, model: setup.model, stream: setup.stream, maxTurns: setup.maxTurns, tool });
    return {};
  }
  if (!conversation || !setup) throw new Error("run before prepare");
  const { contestant, finalText } = setup;
  const play = conversation;
  collectGarbage();
  // Let the collector's background sweeping finish before the clock starts.
  await new Promise((resolve) => setTimeout(resolve, 5));
  toolCalls = 0;
  let text = "";
  const sample = await measure(async () => {
    text = await play();
  });
  if (text !== finalText) throw new Error(`${contestant}: wrong final text ${JSON.stringify(text)}`);
  if (toolCalls !== setup.toolCalls) throw new Error(`${contestant}: ${toolCalls} tool calls, expected ${setup.toolCalls}`);
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

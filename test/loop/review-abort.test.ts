// Review of the loop's abort paths: an abort at every point of a run ends it ABORTED, promptly,
// with a consistent transcript and well-ordered events, and `for await` ends with it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sleep } from "../../src/abort.js";
import { Agent, type AgentConfig, defineTool, type LoopEvent, type Model, type Run, ScriptedModel, textOf, type ToolResultMessage } from "../../src/index.js";
import type { Instrumentation } from "../../src/loop/types.js";
import { calls, eventsOf, ofType, waitingTool } from "./helpers.js";
import { assertRunInvariants, within } from "./review-helpers.js";

type Hooks = { beforeModel?: (turn: number) => void; afterModel?: (turn: number) => void; tool?: (name: string) => void };

function instrumentation(hooks: Hooks): Instrumentation {
  return {
    run: (_info, fn) => fn(),
    modelCall: async (info, fn) => {
      hooks.beforeModel?.(info.turn);
      const response = await fn();
      hooks.afterModel?.(info.turn);
      return response;
    },
    toolCall: (info, fn) => {
      hooks.tool?.(info.toolName);
      return fn();
    },
  };
}

/** A wave with a concurrency cap and a sequential barrier: a, b, barrier, c; then an answer. */
function scenario(config: Partial<AgentConfig> = {}, script?: string[]) {
  const wait = waitingTool("wait", 40);
  const barrier = waitingTool("barrier", 40, { sequential: true });
  const model = new ScriptedModel(
    script ?? [calls(["wait", { value: "a" }, "a"], ["wait", { value: "b" }, "b"], ["barrier", {}, "x"], ["wait", { value: "c" }, "c"]), "the answer"],
    { chunkDelayMs: 5 },
  );
  const agent = new Agent({ model, tools: [wait.tool, barrier.tool], concurrency: 1, ...config });
  return { agent, model, wait, barrier };
}

async function finish(run: Run, ms = 2_000) {
  const events = await within(eventsOf(run), ms);
  assert.notEqual(events, "timeout", "for await ended after the run");
  const result = await within(run, ms);
  assert.notEqual(result, "timeout", "await run resolved");
  if (events === "timeout" || result === "timeout") throw new Error("unreachable");
  assertRunInvariants(result, events);
  return { events, result };
}

test("abort between the model response and its wave: no tool starts, every call gets one Cancelled result", async () => {
  let run!: Run;
  const { agent, model, wait, barrier } = scenario({ instrumentation: instrumentation({ afterModel: () => run.abort("between") }) });
  run = agent.run("go");
  const { result } = await finish(run);
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: between");
  assert.equal(wait.log.length + barrier.log.length, 0, "no tool ran");
  const results = result.messages.filter((message): message is ToolResultMessage => message.role === "tool");
  assert.deepEqual(
    results.map((message) => [message.toolCallId, message.content]),
    ["a", "b", "x", "c"].map((id) => [id, "Cancelled: between"]),
  );
  assert.equal(model.requests.length, 1);
});

test("abort mid-wave with concurrency 1: queued calls and calls behind the barrier never start", async () => {
  let run!: Run;
  const { agent, wait, barrier } = scenario({ instrumentation: instrumentation({ tool: (name) => name === "wait" && run.abort("mid-wave") }) });
  run = agent.run("go");
  const { result, events } = await finish(run);
  assert.equal(result.state, "ABORTED");
  assert.equal(wait.log.length, 0, "the aborting call saw the signal before it started, the others never started");
  assert.equal(barrier.log.length, 0);
  assert.deepEqual(
    ofType(events, "tool-end").map((event) => [event.toolCallId, event.errorKind]),
    ["a", "b", "x", "c"].map((id) => [id, "cancelled"]),
  );
});

test("abort inside the sequential barrier: the barrier gets the signal, the call after it never starts", async () => {
  let run!: Run;
  const wait = waitingTool("wait", 20);
  let barrierSawAbort = false;
  const barrier = defineTool({
    name: "barrier",
    description: "aborts the run from inside, then waits on its signal",
    parameters: { type: "object" },
    sequential: true,
    async execute(_args, context) {
      run.abort("barrier");
      await sleep(10_000, context.signal);
      barrierSawAbort = context.signal.aborted;
      return "late";
    },
  });
  const model = new ScriptedModel([calls(["wait", { value: "a" }, "a"], ["wait", { value: "b" }, "b"], ["barrier", {}, "x"], ["wait", { value: "c" }, "c"]), "never"]);
  run = new Agent({ model, tools: [wait.tool, barrier], concurrency: 1 }).run("go");
  const { result } = await finish(run);
  assert.equal(result.state, "ABORTED");
  await sleep(1);
  assert.equal(barrierSawAbort, true, "the barrier saw its signal abort");
  assert.deepEqual(
    wait.log.map((entry) => entry.args.value),
    ["a", "b"],
    "c, behind the barrier, never started",
  );
});

test("abort during the steered turn: the steering message is in the transcript, the run ends ABORTED", async () => {
  let run!: Run;
  const { agent } = scenario({ instrumentation: instrumentation({ beforeModel: (turn) => turn === 2 && run.abort("during steering") }) });
  run = agent.run("go");
  run.steer("also the spa");
  const { result, events } = await finish(run);
  assert.equal(result.state, "ABORTED");
  assert.deepEqual(ofType(events, "steering").map((event) => event.content), ["also the spa"]);
  assert.deepEqual(result.messages.at(-1), { role: "user", content: "also the spa" });
});

test("abort during a follow-up's model stream ends the run ABORTED; the first answer stays in the transcript", async () => {
  const { agent } = scenario({}, ["first answer", "second answer that streams slowly word by word by word"]);
  const run = agent.run("one");
  run.followUp("two");
  for await (const event of run) if (event.type === "text-delta" && event.turn === 2) run.abort("during follow-up");
  const { result } = await finish(run);
  assert.equal(result.state, "ABORTED");
  assert.equal(result.messages.filter((message) => message.role === "assistant")[0].content[0].type, "text");
  assert.match(JSON.stringify(result.messages), /first answer/);
});

test("abort during the final-answer call of onLimit ends ABORTED (not the limit), without hanging", async () => {
  let run!: Run;
  const hooks = { beforeModel: (turn: number) => turn === 2 && run.abort("during final answer") };
  const { agent } = scenario({ maxTurns: 1, onLimit: "final-answer", instrumentation: instrumentation(hooks) }, [
    calls(["wait", { value: "a" }, "a"]),
    "never streamed",
  ]);
  run = agent.run("go");
  const { result } = await finish(run);
  // The limit was reached first; what matters is that the run ended promptly and consistently.
  assert.ok(result.state === "ABORTED" || result.state === "TURN_LIMIT", result.state);
  assert.doesNotMatch(result.text, /never streamed/);
});

test("abort before the first text delta leaves no empty assistant message in the transcript", async () => {
  const model = new ScriptedModel(["a long answer that never gets to stream"], { chunkDelayMs: 50 });
  const run = new Agent({ model }).run("go");
  for await (const event of run) if (event.type === "turn-start") run.abort("too early");
  const { result } = await finish(run);
  assert.equal(result.state, "ABORTED");
  assert.equal(result.messages.at(-1)?.role, "user", "nothing was said, so no assistant message");
});

test("a model stream that never ends and ignores its signal: abort still ends the run at once", async () => {
  const stuck = {
    provider: "stuck",
    modelId: "forever",
    async *stream() {
      yield { type: "text-start" as const, id: "t" };
      yield { type: "text-delta" as const, id: "t", delta: "thinking" };
      await new Promise(() => undefined);
    },
  };
  const run = new Agent({ model: stuck }).run("go");
  for await (const event of run) if (event.type === "text-delta") setTimeout(() => run.abort("stuck model"), 5);
  const { result } = await finish(run, 500);
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: stuck model");
});

test("a model stream that yields garbage (null, an unknown event type) ends FAILED, never rejecting", async () => {
  for (const garbage of [null, { type: "surprise" }, 42]) {
    const model: Model = {
      provider: "garbage",
      modelId: "g",
      async *stream() {
        yield { type: "text-delta", id: "t", delta: "hi" };
        yield garbage as never;
      },
    };
    const { result, events } = await finish(new Agent({ model }).run("go"));
    assert.equal(result.state, "FAILED", JSON.stringify(garbage));
    assert.equal(ofType(events, "error").length, 1);
  }
});

test("a tool that ignores its signal does not hold an aborted wave that has a concurrency cap", async () => {
  const stubborn = defineTool({ name: "stubborn", description: "", parameters: { type: "object" }, execute: () => new Promise(() => undefined) });
  const model = new ScriptedModel([calls(["stubborn", {}, "s1"], ["stubborn", {}, "s2"], ["stubborn", {}, "s3"]), "never"]);
  const run = new Agent({ model, tools: [stubborn], concurrency: 2 }).run("go");
  for await (const event of run) if (event.type === "tool-start" && event.toolCallId === "s2") setTimeout(() => run.abort("stop"), 5);
  const { result } = await finish(run, 500);
  assert.equal(result.state, "ABORTED");
  assert.equal(result.messages.filter((message) => message.role === "tool").length, 3);
});

test("an abort that lands while tools finish normally still yields exactly one result per call", async () => {
  // Abort at many offsets into a short wave; whatever the timing, the invariants hold.
  for (const delay of [0, 1, 3, 6, 10, 15]) {
    const { tool } = waitingTool("wait", 5);
    const model = new ScriptedModel([calls(["wait", { value: 1 }], ["wait", { value: 2 }], ["wait", { value: 3 }]), "answer"], { chunkDelayMs: 1 });
    const run = new Agent({ model, tools: [tool], concurrency: 2 }).run("go");
    setTimeout(() => run.abort(`at ${delay} ms`), delay);
    const { result } = await finish(run);
    assert.ok(result.state === "ABORTED" || result.state === "COMPLETED", `${delay}: ${result.state}`);
  }
});

test("a timeout and an abort together: the result is one error result per call, and the tool's timer is cleared", async () => {
  const { tool, log } = waitingTool("slow", 5_000, { timeoutMs: 20 });
  const model = new ScriptedModel([calls(["slow", {}, "t"]), "after"]);
  const run = new Agent({ model, tools: [tool] }).run("go");
  setTimeout(() => run.abort("late"), 20);
  const { result } = await finish(run);
  assert.ok(log[0].aborted, "the tool saw its signal");
  const [toolResult] = result.messages.filter((message): message is ToolResultMessage => message.role === "tool");
  assert.equal(toolResult.isError, true);
  assert.match(String(toolResult.content), /timed out after 20 ms|Cancelled: late/);
  await sleep(5);
});

test("events after run-end never appear, even when the consumer is slow", async () => {
  const { agent } = scenario({ concurrency: 4 });
  const run = agent.run("go");
  const events: LoopEvent[] = [];
  for await (const event of run) {
    events.push(event);
    await sleep(1);
  }
  assert.equal(events.at(-1)?.type, "run-end");
  assert.deepEqual(events, run.events);
});

test("a model that ignores its signal and keeps streaming: abort ends the run, nothing it says afterwards reaches the events or the transcript", async () => {
  let yielded = 0;
  const chatty: Model = {
    provider: "chatty",
    modelId: "c",
    async *stream() {
      yield { type: "text-start", id: "t" };
      // Without a pause: whatever the loop does not drop after the abort would show at once.
      while (yielded < 500) {
        yielded++;
        yield { type: "text-delta", id: "t", delta: "x" };
      }
      await new Promise(() => undefined);
    },
  };
  const run = new Agent({ model: chatty }).run("go");
  let deltasAtAbort = -1;
  for await (const event of run) {
    if (event.type === "text-delta" && deltasAtAbort === -1 && yielded >= 3) {
      deltasAtAbort = ofType(run.events, "text-delta").length;
      run.abort("enough");
    }
  }
  const { result, events } = await finish(run, 500);
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: enough");
  assert.equal(ofType(events, "text-delta").length, deltasAtAbort, "no delta after the abort");
  const said = result.messages.filter((message) => message.role === "assistant");
  assert.ok(said.length <= 1);
  assert.ok((said[0] ? textOf(said[0]).length : 0) <= deltasAtAbort, "the transcript holds only what came before the abort");
});

test("a model whose iterator return() throws at once: the run still ends normally", async () => {
  const events: ModelEventLike[] = [
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "done" },
    { type: "text-end", id: "t" },
    { type: "finish", reason: { unified: "stop" } },
  ];
  const model: Model = {
    provider: "odd",
    modelId: "o",
    stream() {
      let index = 0;
      return {
        [Symbol.asyncIterator]() {
          return {
            next: async () => (index < events.length ? { done: false, value: events[index++] as never } : { done: true, value: undefined }),
            return: () => {
              throw new Error("return is broken");
            },
          };
        },
      };
    },
  };
  const { result } = await finish(new Agent({ model }).run("go"));
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "done");
});

type ModelEventLike = { type: string; [key: string]: unknown };

test("the caller's signal (RunOptions.signal) stops a stuck model and a stuck tool as run.abort does", async () => {
  const stuckModel: Model = {
    provider: "stuck",
    modelId: "forever",
    async *stream() {
      yield { type: "text-start", id: "t" };
      await new Promise(() => undefined);
    },
  };
  const controller = new AbortController();
  setTimeout(() => controller.abort("caller stop"), 5);
  const first = await within(new Agent({ model: stuckModel }).run("go", { signal: controller.signal }), 1_000);
  assert.notEqual(first, "timeout");
  if (first !== "timeout") assert.equal(first.reason, "aborted: caller stop");

  const stubborn = defineTool({ name: "stubborn", description: "", parameters: { type: "object" }, execute: () => new Promise(() => undefined) });
  const second = new AbortController();
  const model = new ScriptedModel([calls(["stubborn", {}, "s1"], ["stubborn", {}, "s2"]), "never"]);
  setTimeout(() => second.abort("caller stop"), 5);
  const result = await within(new Agent({ model, tools: [stubborn] }).run("go", { signal: second.signal }), 1_000);
  assert.notEqual(result, "timeout");
  if (result === "timeout") return;
  assert.equal(result.state, "ABORTED");
  const results = result.messages.filter((message): message is ToolResultMessage => message.role === "tool");
  assert.deepEqual(results.map((message) => message.content), ["Cancelled: caller stop", "Cancelled: caller stop"]);

  const already = new AbortController();
  already.abort("before start");
  const early = await new Agent({ model: stuckModel }).run("go", { signal: already.signal });
  assert.equal(early.state, "ABORTED");
  assert.equal(early.reason, "aborted: before start");
});

// A run (src/loop/run.ts) through its public face, against the survivors of its first mutation run:
// its state before it starts, the default reasons of abort and reject, observers (order, waiting,
// their failures reported without stopping the run), a failing `onEvent`, and an instrumentation
// wrapper that fails around the whole run.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, AgentLoopError, defineTool, type Instrumentation, type LoopEvent, type RunObserver, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

const toolResults = (messages: Array<{ role: string }>) => messages.filter((m): m is ToolResultMessage => m.role === "tool");
/** A model whose stream fails at once: the loop emits an `error` event of its own. */
const failingModel = {
  provider: "down",
  modelId: "down-1",
  async *stream() {
    yield { type: "error" as const, error: new AgentLoopError("server", "model down") };
  },
};
const echo = defineTool({ name: "echo", description: "", parameters: { type: "object" }, execute: () => "echoed" });

test("a run is CREATED until it starts; abort and reject without a reason give their default ones", async () => {
  const run = new Agent({ model: new ScriptedModel(["hi"]) }).run("go");
  assert.equal(run.state, "CREATED");
  assert.equal((await run).state, "COMPLETED");

  const hanging = new Agent({ model: { provider: "p", modelId: "m", stream: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => {}) }) }) } }).run("go");
  setTimeout(() => hanging.abort(), 1);
  assert.equal((await hanging).reason, "aborted: aborted by the caller");

  const guarded = defineTool({ name: "write", description: "", parameters: { type: "object" }, needsApproval: true, execute: () => "written" });
  const waiting = new Agent({ model: new ScriptedModel([calls(["write", {}, "w1"]), "done"]), tools: [guarded] }).run("go", {
    onEvent: (event) => {
      if (event.type === "approval-request") setTimeout(() => waiting.reject(event.toolCallId), 0);
    },
  });
  const result = await waiting;
  assert.deepEqual(
    toolResults(result.messages).map((message) => message.content),
    ["Rejected: rejected by the user"],
  );
});

test("an observer gets every event in order, each after its promise for the one before; the run's result waits for the last", async () => {
  const handled: string[] = [];
  let inFlight = 0;
  let overlapped = false;
  const slow: RunObserver = {
    async onEvent(event) {
      inFlight++;
      if (inFlight > 1) overlapped = true;
      // The first events take longest: a later one must still wait for them.
      await new Promise((resolve) => setTimeout(resolve, handled.length < 2 ? 5 : 0));
      handled.push(event.type);
      inFlight--;
    },
  };
  const run = new Agent({ model: new ScriptedModel([calls(["echo", {}]), "done"]), tools: [echo], observers: [slow] }).run("go");
  const events = await eventsOf(run);
  await run;
  assert.equal(overlapped, false, "one event at a time");
  assert.deepEqual(
    handled,
    events.map((event) => event.type),
    "every event, in order, all handled when the result came",
  );

  // An observer that orders itself gets each event at once, while its earlier promises are pending.
  let most = 0;
  let open = 0;
  const grouped: string[] = [];
  const self: RunObserver = {
    ordersItself: true,
    onEvent(event) {
      grouped.push(event.type);
      open++;
      most = Math.max(most, open);
      return new Promise<void>((resolve) =>
        setTimeout(() => {
          open--;
          resolve();
        }, 2),
      );
    },
  };
  const second = new Agent({ model: new ScriptedModel(["hello"]), observers: [self] }).run("go");
  const secondEvents = await eventsOf(second);
  await second;
  assert.ok(most > 1, "handed events while others were pending");
  assert.equal(open, 0, "all settled before the result");
  assert.deepEqual(
    grouped,
    secondEvents.map((event) => event.type),
  );
});

test("an observer's failure, thrown or rejected, is a non-fatal error event (kind, message, cause); the run completes; its failure on an error event is not reported again", async () => {
  for (const how of ["throws", "rejects"] as const) {
    const boom = new Error("disk full");
    const failing: RunObserver = {
      onEvent(event) {
        if (event.type === "run-start" || event.type === "error") {
          if (how === "throws") throw boom;
          return Promise.reject(boom);
        }
        return undefined;
      },
    };
    const seen: LoopEvent[] = [];
    const run = new Agent({ model: new ScriptedModel(["fine"]), observers: [failing] }).run("go", { onEvent: (event) => seen.push(event) });
    const events = await eventsOf(run);
    const result = await run;
    assert.equal(result.state, "COMPLETED", how);
    const errors = ofType(events, "error");
    assert.equal(errors.length, 1, `one report (${how})`);
    assert.equal(errors[0]!.fatal, false);
    assert.equal(errors[0]!.error.kind, "unknown");
    assert.equal(errors[0]!.error.message, "observer failed: disk full");
    assert.equal((errors[0]!.error as AgentLoopError & { cause?: unknown }).cause, boom);
    assert.ok(
      seen.some((event) => event.type === "error"),
      `the caller's onEvent saw the report (${how})`,
    );
  }
});

test("an onEvent that throws is reported once as a non-fatal error, never for an error event, and the run completes", async () => {
  let listenerCalls = 0;
  const run = new Agent({ model: new ScriptedModel(["fine"]) }).run("go", {
    onEvent: (event) => {
      listenerCalls++;
      if (event.type === "run-start" || event.type === "error") throw new Error("listener broke");
    },
  });
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const errors = ofType(events, "error");
  assert.deepEqual(
    errors.map((event) => [event.error.kind, event.error.message, event.fatal]),
    [["unknown", "onEvent failed: listener broke", false]],
  );
  assert.ok(listenerCalls > 2);
});

test("an instrumentation whose run wrapper fails: before the run, a FAILED result ending the events; after it, the run's own result", async () => {
  for (const when of ["before", "after"] as const) {
    const instrumentation: Instrumentation = {
      run: async (_info, fn) => {
        if (when === "after") await fn();
        throw new Error("tracer down");
      },
      modelCall: (_info, fn) => fn(),
      toolCall: (_info, fn) => fn(),
    };
    const run = new Agent({ model: new ScriptedModel(["hello"]), instrumentation }).run("go");
    const events = await eventsOf(run);
    const result = await run;
    if (when === "before") {
      assert.equal(result.state, "FAILED");
      assert.match(String(result.error?.message), /tracer down/);
      assert.equal(run.state, "FAILED");
      const [error, end] = events.slice(-2);
      assert.equal(error!.type, "error");
      assert.equal((error as Extract<LoopEvent, { type: "error" }>).fatal, true);
      assert.equal(end!.type, "run-end");
      assert.equal((end as Extract<LoopEvent, { type: "run-end" }>).state, "FAILED");
      assert.equal((end as Extract<LoopEvent, { type: "run-end" }>).result, result);
    } else {
      assert.equal(result.state, "COMPLETED");
      assert.equal(result.text, "hello");
      assert.equal(ofType(events, "run-end").length, 1);
    }
  }
});

test("a failure of an observer or of onEvent on the loop's own error event, or on run-end, is not reported", async () => {
  const observer: RunObserver = {
    onEvent(event) {
      if (event.type === "error" || event.type === "run-end") throw new Error("observer broke");
    },
  };
  const run = new Agent({ model: failingModel }).run("go", {
    onEvent: (event) => {
      if (event.type === "error" || event.type === "run-end") throw new Error("listener broke");
    },
  });
  const events = await eventsOf(run);
  assert.equal((await run).state, "FAILED");
  assert.deepEqual(
    ofType(events, "error").map((event) => event.error.message),
    ["model down"],
  );
  assert.equal(events.at(-1)!.type, "run-end");
  // The same through the agent's observers.
  const second = new Agent({ model: failingModel, observers: [observer] }).run("go");
  const secondEvents = await eventsOf(second);
  assert.deepEqual(
    ofType(secondEvents, "error").map((event) => event.error.message),
    ["model down"],
  );
  assert.equal(secondEvents.at(-1)!.type, "run-end");
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, type LoopEvent, type Message } from "../../src/index.js";
import type { SessionMemory } from "../../src/loop/types.js";
import { ScriptedModel } from "../../src/model/scripted.js";

/** A store whose loads the test settles by hand (or never); it records the events it is given. */
function slowMemory() {
  const events: LoopEvent[] = [];
  const loads: Array<{ resolve: (history: Message[]) => void; reject: (error: Error) => void }> = [];
  const memory: SessionMemory = {
    loadHistory: () =>
      new Promise<Message[]>((resolve, reject) => {
        loads.push({ resolve, reject });
      }),
    onEvent: (event) => {
      events.push(event);
    },
  };
  return { memory, events, loads };
}

const earlier: Message[] = [
  { role: "user", content: "earlier question" },
  { role: "assistant", content: [{ type: "text", text: "earlier answer" }] },
];

test("run.abort() while the store loads history ends the run promptly as ABORTED", async () => {
  const { memory, events, loads } = slowMemory();
  const model = new ScriptedModel(["never"]);
  const run = new Agent({ model, memory }).run("hi", { sessionId: "s1" });
  const seen: LoopEvent[] = [];
  const iterating = (async () => {
    for await (const event of run) seen.push(event);
  })();
  // Wait until the loop asked the store (the run has started).
  while (loads.length === 0) await new Promise((resolve) => setImmediate(resolve));
  const started = performance.now();
  run.abort("user left");
  const result = await run;
  const elapsed = performance.now() - started;
  await iterating;
  // The load never settles: without the race the run would never end (2 s is generous on a loaded machine).
  assert.ok(elapsed < 2_000, `ended ${elapsed.toFixed(1)} ms after the abort`);
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: user left");
  assert.deepEqual(result.messages, []);
  assert.equal(model.requests.length, 0);
  assert.deepEqual(
    seen.map((event) => event.type),
    ["run-start", "run-end"],
  );
  assert.equal(events.filter((event) => event.type === "run-end").length, 1, "the store hears run-end once");

  // The load finishing later changes nothing.
  loads[0]!.resolve(earlier);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual((await run).messages, []);
  assert.equal(events.filter((event) => event.type === "run-end").length, 1);
});

test("the caller's signal aborting during the load ends the run too; a load failing afterwards is ignored", async () => {
  const { memory, loads } = slowMemory();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const controller = new AbortController();
    const run = new Agent({ model: new ScriptedModel(["never"]), memory }).run("hi", { sessionId: "s1", signal: controller.signal });
    while (loads.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort(new Error("shutting down"));
    const result = await run;
    assert.equal(result.state, "ABORTED");
    assert.equal(result.reason, "aborted: shutting down");
    loads[0]!.reject(new Error("store went away"));
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

test("a slow load that finishes before any abort is used as before; a failing load fails the run", async () => {
  const { memory, loads } = slowMemory();
  const model = new ScriptedModel(["continued", "x"]);
  const agent = new Agent({ model, memory, instructions: "be brief" });
  const run = agent.run("next question", { sessionId: "s1" });
  while (loads.length === 0) await new Promise((resolve) => setImmediate(resolve));
  loads[0]!.resolve(earlier);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(
    model.requests[0]!.messages.map((message) => message.role),
    ["system", "user", "assistant", "user"],
  );
  assert.equal(result.newMessages.length, 2);

  const failing = agent.run("again", { sessionId: "s1" });
  while (loads.length === 1) await new Promise((resolve) => setImmediate(resolve));
  loads[1]!.reject(new Error("database is down"));
  const failed = await failing;
  assert.equal(failed.state, "FAILED");
  assert.match(failed.reason, /database is down/);
});

test("newSession: the store is not asked for history, the run still records its events; without it the history is loaded", async () => {
  const { memory, events, loads } = slowMemory();
  const model = new ScriptedModel(["fresh answer", "second answer"]);
  const agent = new Agent({ model, memory });
  const result = await agent.run("first", { sessionId: "new-1", newSession: true });
  assert.equal(result.state, "COMPLETED");
  assert.equal(loads.length, 0, "no history load for a new session");
  assert.deepEqual(
    model.requests[0].messages.map((message) => message.role),
    ["user"],
  );
  assert.ok(events.some((event) => event.type === "run-end"), "the run's events reached memory");
  // The same session again, not new: the loop asks the store first.
  const again = agent.run("second", { sessionId: "new-1" });
  while (loads.length === 0) await new Promise((resolve) => setImmediate(resolve));
  loads[0].resolve(earlier);
  assert.equal((await again).state, "COMPLETED");
  assert.deepEqual(
    model.requests.at(-1)?.messages.map((message) => message.role),
    ["user", "assistant", "user"],
  );
});

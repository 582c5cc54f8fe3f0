import assert from "node:assert/strict";
import { test } from "node:test";
import { getEventListeners } from "node:events";
import { z } from "zod";
import { Agent, defineTool, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType, waitingTool } from "./helpers.js";

const toolResults = (messages: Array<{ role: string }>) => messages.filter((m): m is ToolResultMessage => m.role === "tool");

test("a wave of 8 tools that each wait 100 ms finishes its tool phase in under 150 ms", async () => {
  // Timers on a busy 2-core CI machine can fire late, so the wave gets up to three tries; every try
  // must still be far below the 800 ms a sequential wave needs, and one must meet the 150 ms bound.
  const phases: number[] = [];
  for (let attempt = 0; attempt < 3 && !phases.some((ms) => ms < 150); attempt++) {
    const { tool, log } = waitingTool("wait", 100);
    const script = [calls(...Array.from({ length: 8 }, (_, index) => ["wait", { value: index }] as [string, unknown])), "done"];
    const run = new Agent({ model: new ScriptedModel(script), tools: [tool] }).run("go");
    const events = await eventsOf(run);
    assert.equal((await run).state, "COMPLETED");
    assert.equal(log.length, 8);
    assert.equal(ofType(events, "tool-end").length, 8);
    const firstStart = Math.min(...log.map((entry) => entry.startedAt));
    const lastEnd = Math.max(...log.map((entry) => entry.endedAt!));
    phases.push(lastEnd - firstStart);
  }
  assert.ok(phases.every((ms) => ms < 400), `the calls did not run concurrently: ${phases.join(", ")} ms`);
  assert.ok(phases.some((ms) => ms < 150), `tool phase took ${phases.map((ms) => ms.toFixed(1)).join(", ")} ms`);
});

test("results are appended in the order the model asked, even when tools finish in another order", async () => {
  // Each call finishes only after the one named in `after` has finished: b, then c, then a, whatever
  // the timing of a loaded machine (all three must be running at once for that order to be possible).
  const finished = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  for (const id of ["a", "b", "c"]) {
    let resolve!: () => void;
    finished.set(id, { promise: new Promise<void>((done) => (resolve = done)), resolve });
  }
  const tool = defineTool({
    name: "wait",
    description: "finishes after another call",
    parameters: { type: "object", properties: { after: { type: "string" } } },
    async execute(args: { after?: string }, context) {
      if (args.after) await finished.get(args.after)!.promise;
      finished.get(context.toolCallId)!.resolve();
      return `done ${context.toolCallId}`;
    },
  });
  const script = [calls(["wait", { after: "c" }, "a"], ["wait", {}, "b"], ["wait", { after: "b" }, "c"]), "done"];
  const model = new ScriptedModel(script);
  const run = new Agent({ model, tools: [tool] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.deepEqual(
    ofType(events, "tool-end").map((event) => event.toolCallId),
    ["b", "c", "a"],
    "tool-end events come as tools finish",
  );
  assert.deepEqual(
    toolResults(result.messages).map((message) => message.toolCallId),
    ["a", "b", "c"],
  );
  assert.deepEqual(
    toolResults(model.requests[1].messages).map((message) => message.toolCallId),
    ["a", "b", "c"],
  );
});

test("concurrency caps the calls in flight; a sequential tool is a barrier", async () => {
  const { tool, log } = waitingTool("wait", 40);
  const order: string[] = [];
  const barrier = defineTool({
    name: "barrier",
    description: "runs alone",
    parameters: { type: "object" },
    sequential: true,
    execute: () => {
      order.push(`barrier(started after ${log.filter((entry) => entry.endedAt).length} finished)`);
      return "ok";
    },
  });
  const script = [calls(["wait", { value: 1 }], ["wait", { value: 2 }], ["wait", { value: 3 }], ["barrier", {}], ["wait", { value: 4 }]), "done"];
  const started = performance.now();
  const run = new Agent({ model: new ScriptedModel(script), tools: [tool, barrier], concurrency: 2 }).run("go");
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  // 3 waits at 2 in flight take two rounds (80 ms), then the barrier, then the last wait (40 ms).
  assert.ok(performance.now() - started >= 115, "concurrency 2 cannot run 3 × 40 ms in one round");
  assert.deepEqual(order, ["barrier(started after 3 finished)"]);
  assert.ok(log[3].startedAt >= log[2].endedAt!, "the call after the barrier waits for it");
});

test("each failure kind becomes an is_error result fed back to the model, plus a tool-error event", async () => {
  const strict = defineTool({
    name: "lookup",
    description: "strict schema",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer", minimum: 1 } },
      required: ["city", "days"],
      additionalProperties: false,
    },
    execute: ({ city }) => `weather in ${city}`,
  });
  const thrower = defineTool({
    name: "explode",
    description: "throws",
    parameters: { type: "object" },
    execute: () => {
      throw new RangeError("the sky fell");
    },
  });
  const { tool: slow } = waitingTool("slow", 5_000, { timeoutMs: 50 });
  const script = [
    calls(
      ["nope", {}, "unknown"],
      ["lookup", "{city: oops", "unparseable"],
      ["lookup", { city: 42 }, "schema"],
      ["explode", {}, "threw"],
      ["slow", {}, "timeout"],
      ["lookup", '```json\n{"city": "Oslo", "days": 2,}\n```', "lenient"],
    ),
    "recovered",
  ];
  const model = new ScriptedModel(script);
  const run = new Agent({ model, tools: [strict, thrower, slow] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "recovered");
  const byId = Object.fromEntries(toolResults(result.messages).map((message) => [message.toolCallId, message]));
  assert.match(String(byId.unknown.content), /^Unknown tool: nope\. Available tools: lookup, explode, slow$/);
  assert.match(String(byId.unparseable.content), /^Invalid arguments for tool lookup: arguments are not valid JSON/);
  assert.match(String(byId.schema.content), /field "city" must be string/);
  assert.match(String(byId.schema.content), /missing required field "days"/);
  assert.equal(byId.threw.content, "RangeError: the sky fell");
  assert.equal(byId.timeout.content, "Tool slow timed out after 50 ms");
  assert.equal(byId.lenient.content, "weather in Oslo");
  for (const id of ["unknown", "unparseable", "schema", "threw", "timeout"]) assert.equal(byId[id].isError, true, id);
  assert.equal(byId.lenient.isError, undefined);
  assert.deepEqual(
    Object.fromEntries(ofType(events, "tool-error").map((event) => [event.toolCallId, event.kind])),
    { unknown: "unknown_tool", unparseable: "invalid_arguments", schema: "schema", threw: "threw", timeout: "timeout" },
  );
  // The model's next request carried every error result.
  assert.equal(toolResults(model.requests[1].messages).filter((message) => message.isError).length, 5);
});

test("a zod schema is accepted: the model sees JSON Schema and arguments are parsed by zod", async () => {
  const tool = defineTool({
    name: "greet",
    description: "greets",
    parameters: z.object({ name: z.string().min(2) }),
    execute: (args) => `hello ${(args as { name: string }).name}`,
  });
  const model = new ScriptedModel([calls(["greet", { name: "Ada" }, "ok"], ["greet", { name: "A" }, "bad"]), "done"]);
  const result = await new Agent({ model, tools: [tool] }).run("go");
  assert.deepEqual(model.requests[0].tools?.[0].parameters, {
    type: "object",
    properties: { name: { type: "string", minLength: 2 } },
    required: ["name"],
    additionalProperties: false,
  });
  const results = toolResults(result.messages);
  assert.equal(results[0].content, "hello Ada");
  assert.match(String(results[1].content), /Invalid arguments for tool greet: field "name"/);
});

test("tool outputs are truncated for the model with a marker; the tool-end event keeps the full output", async () => {
  const big = "x".repeat(50_000);
  const lines = Array.from({ length: 30 }, (_, index) => `line ${index}`).join("\n");
  const tools = [
    defineTool({ name: "big", description: "", parameters: { type: "object" }, execute: () => big }),
    defineTool({ name: "lines", description: "", parameters: { type: "object" }, truncation: { maxLines: 10, mode: "tail" }, execute: () => lines }),
  ];
  const model = new ScriptedModel([calls(["big", {}, "b"], ["lines", {}, "l"]), "done"]);
  const run = new Agent({ model, tools, truncation: { maxChars: 1_000 } }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  const [bigResult, linesResult] = toolResults(result.messages);
  const bigText = String(bigResult.content);
  assert.ok(bigText.length < 1_300);
  assert.match(bigText, /\[agentloop: 49000 characters removed from the output of "big" \(limit 1000 characters, mode head_tail\)/);
  assert.ok(bigText.startsWith("x".repeat(500)) && bigText.endsWith("x".repeat(500)));
  const linesText = String(linesResult.content);
  assert.match(linesText, /^\[agentloop: 20 lines removed from the output of "lines" \(limit 10 lines, mode tail\)/);
  assert.ok(linesText.endsWith("line 29"));
  const ends = ofType(events, "tool-end");
  assert.equal(ends.find((event) => event.name === "big")?.output, big);
  assert.equal(ends.find((event) => event.name === "big")?.truncated, true);
  assert.equal(ends.find((event) => event.name === "lines")?.output, lines);
});

test("JSON Schema formats are validated: a malformed date goes back to the model naming the field", async () => {
  const book = defineTool({
    name: "book",
    description: "books a night",
    parameters: { type: "object", properties: { night: { type: "string", format: "date" } }, required: ["night"] },
    execute: ({ night }) => `booked ${night}`,
  });
  const model = new ScriptedModel([calls(["book", { night: "2026-12-04" }, "good"], ["book", { night: "next friday" }, "bad"]), "done"]);
  const result = await new Agent({ model, tools: [book] }).run("go");
  const [good, bad] = toolResults(result.messages);
  assert.equal(good.content, "booked 2026-12-04");
  assert.equal(bad.isError, true);
  assert.match(String(bad.content), /field "night" must match format "date"/);
});

test("a wave's events: every progress block, then every tool-start in call order, then the ends, whatever fails or answers synchronously", async () => {
  const sync = defineTool({ name: "sync", description: "", parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }, execute: (args) => `n=${args.n}` });
  const { tool: slow } = waitingTool("slow", 5);
  const script = [calls(["slow", {}, "a"], ["nope", {}, "b"], ["sync", { n: "x" }, "c"], ["sync", { n: 1 }, "d"], ["sync", "{not json", "e"]), "done"];
  const run = new Agent({ model: new ScriptedModel(script), tools: [sync, slow] }).run("go");
  const events = await eventsOf(run);
  const wave = events.filter((event) => event.type === "progress" || event.type === "tool-start" || event.type === "tool-end");
  const order = wave.map((event) => `${event.type}:${"toolCallId" in event ? event.toolCallId : ""}`);
  const ids = ["a", "b", "c", "d", "e"];
  assert.deepEqual(order.slice(0, 10), [...ids.map((id) => `progress:${id}`), ...ids.map((id) => `tool-start:${id}`)]);
  assert.equal(order.at(-1), "tool-end:a", "the slow call ends last");
  const ends = ofType(events, "tool-end");
  assert.deepEqual(
    ends.map((event) => [event.toolCallId, event.errorKind ?? "ok"]),
    [["b", "unknown_tool"], ["c", "schema"], ["d", "ok"], ["e", "invalid_arguments"], ["a", "ok"]],
  );
  assert.deepEqual(toolResults((await run).messages).map((message) => message.toolCallId), ["a", "b", "c", "d", "e"]);
});

test("a tool that aborts the run while answering synchronously: its result and the rest of the wave are Cancelled, the rest never runs", async () => {
  const ran: string[] = [];
  let run!: ReturnType<Agent["run"]>;
  const tool = defineTool({
    name: "t",
    description: "",
    parameters: { type: "object", properties: { id: { type: "string" } } },
    execute: (args) => {
      ran.push(String(args.id));
      if (args.id === "b") run.abort("stop here");
      return "fine";
    },
  });
  const model = new ScriptedModel([calls(["t", { id: "a" }, "a"], ["t", { id: "b" }, "b"], ["t", { id: "c" }, "c"]), "never"]);
  run = new Agent({ model, tools: [tool] }).run("go");
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.deepEqual(ran, ["a", "b"], "the call after the abort did not run");
  assert.deepEqual(
    toolResults(result.messages).map((message) => [message.toolCallId, message.content, message.isError ?? false]),
    [["a", "fine", false], ["b", "Cancelled: stop here", true], ["c", "Cancelled: stop here", true]],
  );
  assert.equal(model.requests.length, 1);
});

test("a tool may return any thenable; progress reported after a call answered is ignored", async () => {
  let late: (() => void) | undefined;
  const thenable = defineTool({
    name: "thenable",
    description: "",
    parameters: { type: "object" },
    // A thenable that is not a Promise; it reports for the synchronous call below while the wave still runs.
    execute: () => {
      const thenable = {
        // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise is the point
        then: (resolve: (value: string) => void) =>
          setTimeout(() => {
            late?.();
            resolve("from a thenable");
          }, 2),
      };
      return thenable as unknown as Promise<string>;
    },
  });
  const chatty = defineTool({
    name: "chatty",
    description: "",
    parameters: { type: "object" },
    execute: (_args, context) => {
      context.progress({ step: "before" });
      late = () => context.progress({ step: "after" });
      return "answered";
    },
  });
  const run = new Agent({ model: new ScriptedModel([calls(["thenable", {}, "a"], ["chatty", {}, "b"]), "done"]), tools: [thenable, chatty] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.deepEqual(toolResults(result.messages).map((message) => message.content), ["from a thenable", "answered"]);
  assert.ok(late, "the synchronous tool ran");
  assert.deepEqual(ofType(events, "tool-progress").map((event) => event.data), [{ step: "before" }]);
});

test("a tool that resolves in its own abort listener is still Cancelled, whether the abort comes while it starts or later", async () => {
  for (const when of ["while starting", "later"]) {
    let run!: ReturnType<Agent["run"]>;
    const tool = defineTool({
      name: "listener",
      description: "",
      parameters: { type: "object" },
      execute: (_args, context) =>
        new Promise<string>((resolve) => {
          context.signal.addEventListener("abort", () => resolve("stopped"));
          if (when === "later") setTimeout(() => run.abort("user stop"), 1);
          else run.abort("user stop");
        }),
    });
    run = new Agent({ model: new ScriptedModel([calls(["listener", {}, "a"]), "never"]), tools: [tool] }).run("go");
    const result = await run;
    assert.equal(result.state, "ABORTED", when);
    assert.deepEqual(toolResults(result.messages).map((message) => message.content), ["Cancelled: user stop"], when);
  }
});

test("a wave of 16 concurrent calls adds no abort listener of its own to the run's signal (no MaxListenersExceededWarning)", async () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on("warning", onWarning);
  try {
    const seen: number[] = [];
    const tool = defineTool({
      name: "wait",
      description: "",
      parameters: { type: "object" },
      execute: async (_args, context) => {
        seen.push(getEventListeners(context.signal, "abort").length);
        await new Promise((resolve) => setTimeout(resolve, 2));
        return "ok";
      },
    });
    const script = [calls(...Array.from({ length: 16 }, (_, index) => ["wait", {}, `c${index}`] as [string, unknown, string])), "done"];
    const result = await new Agent({ model: new ScriptedModel(script), tools: [tool] }).run("go");
    assert.equal(result.state, "COMPLETED");
    assert.deepEqual(seen, Array(16).fill(0));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings, []);
  } finally {
    process.off("warning", onWarning);
  }
});

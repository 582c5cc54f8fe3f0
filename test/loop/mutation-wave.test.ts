// One wave of tool calls (src/loop/wave.ts) through the public API, written against the survivors of
// its first mutation run: what a tool may return and what the model and the events then show, a
// thrown value's text, the progress block of a delegation, the tool context's fields, a tool whose
// JSON Schema does not compile, a timed call's link to the run's abort, an abort while a tool ignores
// its signal, late progress of a settled call, sequential barriers and the concurrency limit, and a
// broken instrumentation wrapper.
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { Agent, defineTool, type Instrumentation, type Run, ScriptedModel, type Tool, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

const toolResults = (messages: Array<{ role: string }>) => messages.filter((m): m is ToolResultMessage => m.role === "tool");
const object = { type: "object" } as const;

function returning(name: string, value: () => unknown, options: Partial<Tool> = {}): Tool {
  return defineTool({ name, description: "", parameters: object, execute: value as Tool["execute"], ...options });
}

test("what a tool returns becomes the result: nothing, a number, an object, a content object with an error or structured data, text and images", async () => {
  const image = { type: "image", data: "AAAA", mediaType: "image/png" };
  const bare = { type: "image", data: "AAAA" };
  const tools = [
    returning("nothing", () => undefined),
    returning("nul", () => null),
    returning("number", () => 42),
    returning("plain", () => ({ a: 1 })),
    // biome-ignore lint/suspicious/noThenProperty: an object whose `then` is no function is the point
    returning("notThenable", () => ({ then: "not a function" })),
    returning("oddContent", () => ({ content: 5 })),
    // Not an object: a function is no content object, whatever its properties.
    returning("fn", () => Object.assign(function answer() {}, { content: "from a function" })),
    returning("failing", () => ({ content: "it broke", isError: true })),
    returning("structured", () => ({ content: "two rooms", structured: { rooms: 2 } })),
    returning("notError", () => ({ content: "fine", isError: "yes" })),
    returning("parts", () => ({ content: [{ type: "text", text: "abcdefghij" }, image, bare] }), { truncation: { maxChars: 100 } }),
    returning("cut", () => ({ content: [image, { type: "text", text: "x".repeat(300) }] }), { truncation: { maxChars: 100 } }),
  ];
  const names = tools.map((tool) => tool.name);
  const model = new ScriptedModel([calls(...names.map((name) => [name, {}, name] as [string, unknown, string])), "done"]);
  const run = new Agent({ model, tools }).run("go");
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const ends = Object.fromEntries(ofType(events, "tool-end").map((event) => [event.toolCallId, event]));
  const outputs = Object.fromEntries(names.map((name) => [name, ends[name]!.output]));
  assert.deepEqual(outputs, {
    nothing: "",
    nul: "",
    number: "42",
    plain: '{"a":1}',
    notThenable: '{"then":"not a function"}',
    oddContent: '{"content":5}',
    fn: outputs.fn,
    failing: "it broke",
    structured: "two rooms",
    notError: "fine",
    parts: "abcdefghij\n[image image/png]\n[image]",
    cut: `[image image/png]\n${"x".repeat(300)}`,
  });
  // (a bundler may rename the function: `answer2`)
  assert.match(String(outputs.fn), /^function answer\d*\(\) \{\s*\}$/, "a function returned is shown as its text");
  assert.deepEqual(
    names.map((name) => [name, ends[name]!.isError, ends[name]!.errorKind]),
    names.map((name) => [name, name === "failing", name === "failing" ? "error_result" : undefined]),
  );
  assert.deepEqual(ends.plain!.structured, { a: 1 });
  assert.deepEqual(ends.structured!.structured, { rooms: 2 });
  assert.equal(ends.nothing!.structured, undefined);
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => [event.toolCallId, event.kind, event.message]),
    [["failing", "error_result", "it broke"]],
  );
  // Parts go to the model as parts, each text part truncated on its own, images untouched.
  const results = Object.fromEntries(toolResults(model.requests[1]!.messages).map((message) => [message.toolCallId, message]));
  assert.deepEqual(results.parts!.content, [{ type: "text", text: "abcdefghij" }, image, bare]);
  assert.equal(ends.parts!.truncated, false, "nothing was cut");
  const [kept, cutText] = results.cut!.content as Array<{ type: string; text?: string }>;
  assert.deepEqual(kept, image);
  assert.equal(cutText!.type, "text");
  assert.match(cutText!.text!, /\[agentloop: 200 characters removed from the output of "cut"/);
  assert.equal(ends.cut!.truncated, true);
  assert.equal(results.failing!.isError, true);
  assert.equal(results.nothing!.content, "");
  assert.equal(results.nothing!.isError, undefined);
});

test("a thrown value's text: an Error by its name, anything else as Error: <value>; a throw after the run was aborted is Cancelled", async () => {
  let run!: Run;
  const tools = [
    returning("plainError", () => {
      throw new Error("plain");
    }),
    returning("typeError", () => {
      throw new TypeError("typed");
    }),
    returning("text", () => {
      throw "just text";
    }),
    returning("rejects", () => Promise.reject(new Error("later"))),
  ];
  const model = new ScriptedModel([calls(...tools.map((tool) => [tool.name, {}, tool.name] as [string, unknown, string])), "done"]);
  const result = await new Agent({ model, tools }).run("go");
  assert.deepEqual(
    toolResults(result.messages).map((message) => [message.toolCallId, message.content, message.isError]),
    [
      ["plainError", "Error: plain", true],
      ["typeError", "TypeError: typed", true],
      ["text", "Error: just text", true],
      ["rejects", "Error: later", true],
    ],
  );
  // A tool that aborts the run and then throws (synchronously, or from its promise with a timeout of its own).
  for (const timeoutMs of [undefined, 5_000]) {
    const aborting = returning(
      "aborting",
      () => {
        run.abort("stop now");
        throw new Error("boom");
      },
      { timeoutMs },
    );
    run = new Agent({ model: new ScriptedModel([calls(["aborting", {}, "a"]), "never"]), tools: [aborting] }).run("go");
    const aborted = await run;
    assert.equal(aborted.state, "ABORTED");
    assert.deepEqual(
      toolResults(aborted.messages).map((message) => message.content),
      ["Cancelled: stop now"],
      `timeout ${timeoutMs}`,
    );
  }
});

test("a delegation's progress block names the agent; another tool's names the tool, whatever its name", async () => {
  const tools = [
    returning("delegate_to_worker", () => "done", { action: "delegate" }),
    returning("delegate_to_plain", () => "done"),
    returning("team_delegate_to_helper", () => "done", { action: "delegate" }),
  ];
  const script = [calls(["delegate_to_worker", {}, "w"], ["delegate_to_plain", {}, "p"], ["team_delegate_to_helper", {}, "t"]), "ok"];
  const run = new Agent({ model: new ScriptedModel(script), tools }).run("go");
  const events = await eventsOf(run);
  assert.deepEqual(
    ofType(events, "progress").map((event) => [event.toolCallId, event.action, event.target]),
    [
      ["w", "delegate", "worker"],
      ["p", "tool_call", "delegate_to_plain"],
      ["t", "delegate", "team_delegate_to_helper"],
    ],
  );
  assert.deepEqual(
    ofType(events, "tool-start").map((event) => event.action),
    ["delegate", "tool_call", "delegate"],
  );
});

test("an agent without tools: a call gets Unknown tool with (none) available", async () => {
  const result = await new Agent({ model: new ScriptedModel([calls(["nope", {}, "n"]), "ok"]) }).run("go");
  assert.deepEqual(
    toolResults(result.messages).map((message) => message.content),
    ["Unknown tool: nope. Available tools: (none)"],
  );
});

test("the tool context: its idempotency key is the run id and the call id; each call, timed or not, gets its own context", async () => {
  const seen: Array<[string, string, string]> = [];
  const record = (_args: unknown, context: { toolCallId: string; idempotencyKey: string; runId: string }) => {
    seen.push([context.toolCallId, context.idempotencyKey, context.runId]);
    return "ok";
  };
  // A timed call among untimed ones, by the tool's own timeout and by the agent's.
  const tools = [returning("timed", record as never, { timeoutMs: 5_000 }), returning("untimed", record as never)];
  const script = [calls(["untimed", {}, "u1"], ["timed", {}, "t1"], ["untimed", {}, "u2"]), "done"];
  const run = new Agent({ model: new ScriptedModel(script), tools }).run("go");
  await run;
  assert.deepEqual(
    seen.sort(),
    ["t1", "u1", "u2"].map((id) => [id, `${run.id}:${id}`, run.id]),
  );
  seen.length = 0;
  const agentTimed = new Agent({ model: new ScriptedModel(script), tools: [returning("timed", record as never), returning("untimed", record as never)], toolTimeoutMs: 5_000 }).run("go");
  await agentTimed;
  assert.deepEqual(
    seen.sort(),
    ["t1", "u1", "u2"].map((id) => [id, `${agentTimed.id}:${id}`, agentTimed.id]),
  );
});

test("a tool whose JSON Schema does not compile: its calls fail with the schema error and never run; the rest of the wave runs", async () => {
  let ran = 0;
  const broken = defineTool({
    name: "broken",
    description: "",
    parameters: { type: "object", properties: { a: { type: "nonsense" } } } as never,
    execute: () => {
      ran++;
      return "ran";
    },
  });
  for (const instrumented of [false, true]) {
    const instrumentation: Instrumentation = { run: (_info, fn) => fn(), modelCall: (_info, fn) => fn(), toolCall: (_info, fn) => fn() };
    const model = new ScriptedModel([calls(["broken", { a: 1 }, "b"], ["fine", {}, "f"]), "done"]);
    const result = await new Agent({ model, tools: [broken, returning("fine", () => "fine")], ...(instrumented ? { instrumentation } : {}) }).run("go");
    assert.equal(result.state, "COMPLETED");
    const [b, f] = toolResults(result.messages);
    assert.match(String(b!.content), /^Error: schema is invalid/);
    assert.equal(b!.isError, true);
    assert.equal(f!.content, "fine");
  }
  assert.equal(ran, 0);
  const run = new Agent({ model: new ScriptedModel([calls(["broken", {}, "b"]), "done"]), tools: [broken] }).run("go");
  const events = await eventsOf(run);
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => event.kind),
    ["threw"],
  );
});

test("a zod schema whose check throws: the call fails with the exception's text and never runs", async () => {
  let ran = 0;
  const tool = defineTool({
    name: "checked",
    description: "",
    parameters: z.object({ n: z.number() }).refine(() => {
      throw new Error("the check broke");
    }),
    execute: () => {
      ran++;
      return "ran";
    },
  });
  const run = new Agent({ model: new ScriptedModel([calls(["checked", { n: 1 }, "c"]), "done"]), tools: [tool] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(ran, 0);
  assert.deepEqual(
    toolResults(result.messages).map((message) => [message.content, message.isError]),
    [["Error: the check broke", true]],
  );
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => event.kind),
    ["threw"],
  );
});

test("a call prepared after the run was aborted never runs, even one with a timeout of its own behind a sequential barrier", async () => {
  let run!: Run;
  let ran = 0;
  const aborting = returning("aborting", () => {
    run.abort("stop");
    return "stopped";
  });
  const timed = returning(
    "timed",
    () => {
      ran++;
      return "ran";
    },
    { timeoutMs: 5_000, sequential: true },
  );
  for (const concurrency of [undefined, 1]) {
    ran = 0;
    run = new Agent({ model: new ScriptedModel([calls(["aborting", {}, "a"], ["timed", {}, "t"]), "never"]), tools: [aborting, timed], ...(concurrency ? { concurrency } : {}) }).run("go");
    const result = await run;
    assert.equal(result.state, "ABORTED");
    assert.equal(ran, 0, `the timed call did not run (concurrency ${concurrency})`);
    assert.deepEqual(
      toolResults(result.messages).map((message) => message.content),
      ["Cancelled: stop", "Cancelled: stop"],
    );
  }
});

test("progress and nested events a call reports after it settled (thrown, answered by a promise) are dropped", async () => {
  const later: Array<() => void> = [];
  const stash = (context: { progress: (data: unknown) => void; nested: (agent: string, event: never) => void }, label: string) => {
    context.progress({ from: label });
    context.nested("inner", { type: "text-delta", runId: "inner", turn: 1, delta: label } as never);
    later.push(() => {
      context.progress({ from: `${label} late` });
      context.nested("inner", { type: "text-delta", runId: "inner", turn: 1, delta: `${label} late` } as never);
    });
  };
  const thrower = returning("thrower", ((_args: unknown, context: never) => {
    stash(context, "thrower");
    throw new Error("no");
  }) as never);
  const promised = returning("promised", (async (_args: unknown, context: never) => {
    stash(context, "promised");
    return "yes";
  }) as never);
  const last = returning("last", async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (const report of later) report();
    return "last";
  });
  const run = new Agent({ model: new ScriptedModel([calls(["thrower", {}, "t"], ["promised", {}, "p"], ["last", {}, "l"]), "done"]), tools: [thrower, promised, last] }).run("go");
  const events = await eventsOf(run);
  assert.equal(later.length, 2);
  assert.deepEqual(
    ofType(events, "tool-progress").map((event) => event.data),
    [{ from: "thrower" }, { from: "promised" }],
  );
  assert.deepEqual(
    ofType(events, "nested").map((event) => [event.toolCallId, event.agent]),
    [
      ["t", "inner"],
      ["p", "inner"],
    ],
  );
});

test("an abort reaches a running call that ignores its signal, after another call of the wave already finished", async () => {
  let run!: Run;
  let ignoredEnded = false;
  const fast = returning("fast", async () => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    setTimeout(() => run.abort("user stop"), 5);
    return "fast";
  });
  const ignoring = returning("ignoring", () => new Promise((resolve) => setTimeout(() => resolve((ignoredEnded = true)), 3_000).unref()));
  run = new Agent({ model: new ScriptedModel([calls(["fast", {}, "f"], ["ignoring", {}, "i"]), "never"]), tools: [fast, ignoring] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => [event.toolCallId, event.kind]),
    [["i", "cancelled"]],
  );
  assert.equal(result.state, "ABORTED");
  assert.equal(ignoredEnded, false, "the run did not wait for the tool that ignores its signal");
  assert.deepEqual(
    toolResults(result.messages).map((message) => [message.toolCallId, message.content]),
    [
      ["f", "fast"],
      ["i", "Cancelled: user stop"],
    ],
  );
});

test("a call started before another call of the wave aborts the run synchronously is cancelled at once, though it ignores its signal", async () => {
  let run!: Run;
  let ignoredEnded = false;
  const ignoring = returning("ignoring", () => new Promise((resolve) => setTimeout(() => resolve((ignoredEnded = true)), 3_000).unref()));
  const aborting = returning("aborting", () => {
    run.abort("stop");
    return "stopped";
  });
  run = new Agent({ model: new ScriptedModel([calls(["ignoring", {}, "i"], ["aborting", {}, "a"]), "never"]), tools: [ignoring, aborting] }).run("go");
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(ignoredEnded, false);
  assert.deepEqual(
    toolResults(result.messages).map((message) => message.content),
    ["Cancelled: stop", "Cancelled: stop"],
  );
});

test("a call with a timeout of its own is cancelled by the run's abort: its signal fires, it ends Cancelled, not timed out", async () => {
  let run!: Run;
  let signalFired = false;
  const timed = returning(
    "timed",
    ((_args: unknown, context: { signal: AbortSignal }) => {
      setTimeout(() => run.abort("user stop"), 1);
      return new Promise((resolve) =>
        context.signal.addEventListener("abort", () => {
          signalFired = true;
          resolve("saw the abort");
        }),
      );
    }) as never,
    { timeoutMs: 4_000 },
  );
  run = new Agent({ model: new ScriptedModel([calls(["timed", {}, "t"]), "never"]), tools: [timed] }).run("go");
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(signalFired, true);
  assert.deepEqual(
    toolResults(result.messages).map((message) => message.content),
    ["Cancelled: user stop"],
  );
});

test("a sequential tool runs alone: the calls after it start once it finished; the calls before it run together", async () => {
  const log: string[] = [];
  const step = (name: string, options: Partial<Tool> = {}) =>
    returning(
      name,
      ((args: { id: string }) => {
        log.push(`start ${args.id}`);
        return new Promise((resolve) =>
          setTimeout(() => {
            log.push(`end ${args.id}`);
            resolve(args.id);
          }, 2),
        );
      }) as never,
      options,
    );
  const tools = [step("par"), step("seq", { sequential: true })];
  for (const instrumented of [false, true]) {
    log.length = 0;
    const instrumentation: Instrumentation = { run: (_info, fn) => fn(), modelCall: (_info, fn) => fn(), toolCall: (_info, fn) => fn() };
    const script = [calls(["par", { id: "a" }], ["par", { id: "b" }], ["seq", { id: "s" }], ["par", { id: "c" }], ["par", { id: "d" }]), "done"];
    const result = await new Agent({ model: new ScriptedModel(script), tools, ...(instrumented ? { instrumentation } : {}) }).run("go");
    assert.deepEqual(toolResults(result.messages).map((message) => message.content), ["a", "b", "s", "c", "d"]);
    const at = (entry: string) => log.indexOf(entry);
    assert.ok(at("start b") < at("end a") && at("start a") < at("end b"), `a and b together: ${log.join(", ")}`);
    assert.ok(at("end a") < at("start s") && at("end b") < at("start s"), `s after a and b: ${log.join(", ")}`);
    assert.ok(at("end s") < at("start c") && at("end s") < at("start d"), `c and d after s: ${log.join(", ")}`);
    assert.ok(at("start d") < at("end c"), `c and d together: ${log.join(", ")}`);
  }
});

test("concurrency limits the calls in flight, with one group or several", async () => {
  let inFlight = 0;
  let most = 0;
  const tool = returning("work", async () => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 2));
    inFlight--;
    return "ok";
  });
  const barrier = returning("barrier", () => "barrier", { sequential: true });
  for (const [concurrency, script, expected] of [
    [1, calls(["work", {}], ["work", {}]), 1],
    [2, calls(["work", {}], ["work", {}], ["work", {}]), 2],
    [2, calls(["barrier", {}], ["work", {}], ["work", {}], ["work", {}]), 2],
    [3, calls(["work", {}], ["work", {}], ["work", {}]), 3],
  ] as const) {
    most = 0;
    const result = await new Agent({ model: new ScriptedModel([script, "done"]), tools: [tool, barrier], concurrency }).run("go");
    assert.equal(result.state, "COMPLETED");
    assert.equal(most, expected, `concurrency ${concurrency}`);
  }
});

test("instrumentation wrapping each call: failed preparation never runs the tool; a wrapper that fails before or after the call", async () => {
  let ran = 0;
  const strict = defineTool({
    name: "strict",
    description: "",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
    execute: (args) => {
      ran++;
      return `n=${args.n}`;
    },
  });
  const wrapped: Array<{ toolName: string; arguments: unknown }> = [];
  const passing: Instrumentation = {
    run: (_info, fn) => fn(),
    modelCall: (_info, fn) => fn(),
    toolCall: (info, fn) => {
      wrapped.push({ toolName: info.toolName, arguments: info.arguments });
      return fn();
    },
  };
  const result = await new Agent({ model: new ScriptedModel([calls(["strict", { n: "x" }, "bad"], ["strict", { n: 2 }, "good"]), "done"]), tools: [strict], instrumentation: passing }).run("go");
  assert.equal(ran, 1, "only the valid call ran");
  assert.deepEqual(toolResults(result.messages).map((message) => [message.content, message.isError ?? false]), [
    [toolResults(result.messages)[0]!.content, true],
    ["n=2", false],
  ]);
  assert.match(String(toolResults(result.messages)[0]!.content), /^Invalid arguments for tool strict/);
  assert.deepEqual(
    wrapped.map((entry) => entry.toolName),
    ["strict", "strict"],
  );

  // A wrapper that throws before calling the tool, or after it ran.
  for (const when of ["before", "after"] as const) {
    ran = 0;
    const broken: Instrumentation = {
      run: (_info, fn) => fn(),
      modelCall: (_info, fn) => fn(),
      toolCall: async (_info, fn) => {
        if (when === "after") await fn();
        throw new Error("tracer down");
      },
    };
    const run = new Agent({ model: new ScriptedModel([calls(["strict", { n: 1 }, "c"]), "done"]), tools: [strict], instrumentation: broken }).run("go");
    const events = await eventsOf(run);
    const outcome = await run;
    assert.equal(outcome.state, "COMPLETED", when);
    assert.equal(ofType(events, "tool-start").length, 1, `one tool-start (${when})`);
    const [message] = toolResults(outcome.messages);
    const [end] = ofType(events, "tool-end");
    if (when === "before") {
      assert.equal(ran, 0);
      assert.equal(message!.content, "Error: instrumentation failed: tracer down");
      assert.equal(message!.isError, true);
      assert.equal(end!.errorKind, "threw");
    } else {
      assert.equal(ran, 1);
      assert.equal(message!.content, "n=1", "the call's result is kept");
      assert.equal(end!.isError, false);
    }
  }
});

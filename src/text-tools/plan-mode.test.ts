import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentLoopError } from "../errors.js";
import { Agent } from "../loop/agent.js";
import type { LoopEvent } from "../loop/events.js";
import type { Model, } from "../model/model.js";
import { ScriptedModel } from "../model/scripted.js";
import { defineTool } from "../tools/tool.js";
import { PLAN_FINAL_RESPONSE_PROMPT, parsePlan, planToolCalling } from "./index.js";
import { streamEvents as collect, observedScript } from "../../test/support.js";

delete process.env.DEBUG_MOCK_RESPONSES;

const plan = (status: "continue" | "done", tools: Array<{ id: string; tool: string; args?: object; needs?: string[] }>, action = "working") =>
  JSON.stringify({ status, action, tools, reasoning: "because" });

/** Hotel tools; every tool of a wave waits until the whole wave has started, so only parallel execution finishes. */
function hotelTools(waveSize: () => number) {
  const log: string[] = [];
  let started = 0;
  let release: () => void = () => {};
  let barrier = new Promise<void>((resolve) => (release = resolve));
  const enter = async (label: string) => {
    log.push(label);
    if (++started === waveSize()) {
      started = 0;
      release();
    }
    const current = barrier;
    const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 1000).unref());
    if ((await Promise.race([current, timeout])) === "timeout") throw new Error(`${label}: the wave did not run in parallel`);
    queueMicrotask(() => {
      barrier = new Promise<void>((resolve) => (release = resolve));
    });
  };
  const tools = [
    defineTool({
      name: "calendar.resolve_holiday",
      description: "Dates of a holiday.",
      parameters: { type: "object", properties: { holiday_name: { type: "string" } }, required: ["holiday_name"] },
      execute: async (args) => {
        await enter(`holiday:${args.holiday_name}`);
        return "Hanukkah is from 2026-12-04 to 2026-12-11";
      },
    }),
    defineTool({
      name: "calendar.resolve_date_hint",
      description: "Dates of a phrase like next weekend.",
      parameters: { type: "object", properties: { hint: { type: "string" } }, required: ["hint"] },
      execute: async (args) => {
        await enter(`hint:${args.hint}`);
        return "Next weekend is 2025-01-17 to 2025-01-19";
      },
    }),
    defineTool({
      name: "pms.get_availability",
      description: "Rooms free between two dates.",
      parameters: { type: "object", properties: { check_in: { type: "string" }, check_out: { type: "string" } }, required: ["check_in", "check_out"] },
      execute: async (args) => {
        await enter(`availability:${args.check_in}`);
        return JSON.stringify({ rooms: [{ type: "double", price: 180 }] });
      },
    }),
  ];
  return { tools, log };
}

describe("parsePlan", () => {
  it("reads a plan alone, fenced, or inside prose", () => {
    const text = plan("continue", [{ id: "get_holiday", tool: "calendar.resolve_holiday", args: { holiday_name: "Hanukkah" } }]);
    for (const variant of [text, `\`\`\`json\n${text}\n\`\`\``, `Here is my plan: ${text} Thanks.`]) {
      const parsed = parsePlan(variant);
      assert.equal(parsed.ok, true, variant);
      if (parsed.ok) assert.deepEqual(parsed.plan.tools, [{ id: "get_holiday", tool: "calendar.resolve_holiday", args: { holiday_name: "Hanukkah" } }]);
    }
  });

  it("keeps braces inside strings", () => {
    const parsed = parsePlan('{"status": "done", "action": "a {b} }", "tools": [], "reasoning": "{"}');
    assert.ok(parsed.ok);
    if (parsed.ok) assert.equal(parsed.plan.action, "a {b} }");
  });

  it("names the failing fields", () => {
    const missing = parsePlan('{"action": "x", "tools": [{"id": "a", "args": {}}]}');
    assert.deepEqual(missing, {
      ok: false,
      error: 'missing required field "status"; missing required field "reasoning"; missing required field "tools.0.tool"',
    });
    const wrongStatus = parsePlan('{"status": "maybe", "action": "x", "reasoning": "y"}');
    assert.deepEqual(wrongStatus, { ok: false, error: 'field "status" must be one of ["continue","done"]' });
    const wrongType = parsePlan('{"status": "done", "action": "x", "reasoning": "y", "tools": [{"id": "a", "tool": "t", "args": "nope"}]}');
    assert.deepEqual(wrongType, { ok: false, error: 'field "tools.0.args" must be object' });
  });

  it("reports truncated JSON and answers without JSON", () => {
    const truncated = parsePlan('{"status": "continue", "action": "x", "tools": [{"id": "a"');
    assert.equal(truncated.ok, false);
    if (!truncated.ok) assert.match(truncated.error, /incomplete/);
    const prose = parsePlan("I think we are done here.");
    assert.deepEqual(prose, { ok: false, error: "no JSON object in the answer: I think we are done here." });
  });
});

describe("planToolCalling in the agent loop", () => {
  it("runs the hotel scenario: two parallel waves, then done and a streamed final answer", async () => {
    const { model, holder } = observedScript([
      plan(
        "continue",
        [
          { id: "holiday", tool: "calendar.resolve_holiday", args: { holiday_name: "Hanukkah" } },
          { id: "weekend", tool: "calendar.resolve_date_hint", args: { hint: "next weekend" } },
        ],
        "Resolving both dates",
      ),
      plan("continue", [
        { id: "avail_1", tool: "pms.get_availability", args: { check_in: "2026-12-04", check_out: "2026-12-05" }, needs: ["holiday"] },
        { id: "avail_2", tool: "pms.get_availability", args: { check_in: "2025-01-17", check_out: "2025-01-19" }, needs: ["weekend"] },
      ]),
      plan("done", []),
      "Doubles are free for Hanukkah and next weekend at 180.",
    ]);
    const { tools, log } = hotelTools(() => 2);
    const agent = new Agent({ name: "hotel", instructions: "You are a hotel booking assistant.", model: planToolCalling(model), tools });
    const run = agent.run("I need availability for Hanukkah and also next weekend");
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    const result = await run;

    assert.equal(result.state, "COMPLETED", result.reason);
    assert.equal(result.text, "Doubles are free for Hanukkah and next weekend at 180.");
    assert.equal(result.toolRounds, 2);
    assert.ok(events.every((event) => event.type !== "tool-end" || !event.isError), "every tool of a wave ran in parallel");
    assert.deepEqual(log.slice(0, 2).sort(), ["hint:next weekend", "holiday:Hanukkah"]);
    assert.deepEqual(log.slice(2).sort(), ["availability:2025-01-17", "availability:2026-12-04"]);
    const order = events
      .filter((event) => ["turn-start", "turn-end", "tool-start", "tool-end", "run-end"].includes(event.type))
      .map((event) => (event.type === "turn-end" ? `turn-end:${event.toolCalls}` : event.type));
    assert.deepEqual(order, [
      "turn-start",
      "turn-end:2",
      "tool-start",
      "tool-start",
      "tool-end",
      "tool-end",
      "turn-start",
      "turn-end:2",
      "tool-start",
      "tool-start",
      "tool-end",
      "tool-end",
      "turn-start",
      "turn-end:0",
      "run-end",
    ]);
    const deltas = events.filter((event) => event.type === "text-delta");
    assert.ok(deltas.length > 1 && deltas.every((event) => event.type === "text-delta" && event.turn === 3));

    const requests = holder.current!.requests;
    assert.equal(requests.length, 4);
    assert.match(String(requests[0].messages[0].content), /^You are a hotel booking assistant\.\n\n## Tool planning/);
    assert.match(String(requests[0].messages[0].content), /- calendar\.resolve_holiday: Dates of a holiday\./);
    // The second planning call sees wave 1 as a plan and its results keyed by the plan's ids.
    const second = requests[1].messages;
    assert.deepEqual(JSON.parse(String((second.at(-2)!.content as Array<{ text: string }>)[0].text)), {
      status: "continue",
      action: "Resolving both dates",
      tools: [
        { id: "holiday", tool: "calendar.resolve_holiday", args: { holiday_name: "Hanukkah" }, needs: [] },
        { id: "weekend", tool: "calendar.resolve_date_hint", args: { hint: "next weekend" }, needs: [] },
      ],
      reasoning: "because",
    });
    const results = String(second.at(-1)!.content);
    assert.ok(results.startsWith("Tool results:\n"));
    assert.deepEqual(JSON.parse(results.slice("Tool results:\n".length)), {
      holiday: "Hanukkah is from 2026-12-04 to 2026-12-11",
      weekend: "Next weekend is 2025-01-17 to 2025-01-19",
    });
    // The final response call has no planner prompt and ends with the final-response request.
    const final = requests[3].messages;
    assert.equal(String(final[0].content), "You are a hotel booking assistant.");
    assert.deepEqual(final.at(-1), { role: "user", content: PLAN_FINAL_RESPONSE_PROMPT });
  });

  it("after a `done` plan with tools, the next turn goes straight to the final response", async () => {
    const { model, holder } = observedScript([
      plan("done", [{ id: "check", tool: "pms.get_availability", args: { check_in: "2026-12-04", check_out: "2026-12-05" } }]),
      "A double is free on 2026-12-04.",
    ]);
    const { tools } = hotelTools(() => 1);
    const agent = new Agent({ model: planToolCalling(model), tools });
    const result = await agent.run("Room on 2026-12-04?");
    assert.equal(result.text, "A double is free on 2026-12-04.");
    assert.equal(holder.current!.requests.length, 2);
    assert.match(String(holder.current!.requests[1].messages.at(-1)!.content), /"check": \{\s*"rooms"[\s\S]*You have the tool results you need/);
  });

  it("re-asks once after an invalid plan, naming the failing fields", async () => {
    const { model, holder } = observedScript([
      '{"status": "continue", "action": "x", "tools": [{"id": "a", "args": {}}]}',
      plan("done", []),
      "Nothing to check.",
    ]);
    const agent = new Agent({ model: planToolCalling(model), tools: hotelTools(() => 1).tools });
    const result = await agent.run("hello");
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "Nothing to check.");
    const reask = holder.current!.requests[1].messages.at(-1)!;
    assert.equal(reask.role, "user");
    assert.match(String(reask.content), /not valid: missing required field "reasoning"; missing required field "tools\.0\.tool"/);
  });

  it("fails the run with an error naming the fields when the re-ask is invalid too", async () => {
    const { model } = observedScript(['{"status": "later"}', "no json at all"]);
    const agent = new Agent({ model: planToolCalling(model), tools: hotelTools(() => 1).tools });
    const run = agent.run("hello");
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    const result = await run;
    assert.equal(result.state, "FAILED");
    assert.match(result.error!.message, /invalid plan \(after 1 re-ask\): no JSON object in the answer: no json at all/);
    assert.ok(events.some((event) => event.type === "error" && event.fatal));
  });

  it("with maxRepairs 0 the first invalid plan fails, naming the fields", async () => {
    const events = await collect(planToolCalling(new ScriptedModel(['{"status": "later", "action": "a", "reasoning": "r"}']), { maxRepairs: 0 }), {
      messages: [{ role: "user", content: "q" }],
      tools: [{ name: "t", description: "", parameters: {} }],
    });
    const last = events.at(-1);
    assert.equal(last?.type, "error");
    if (last?.type === "error") assert.match(last.error.message, /invalid plan: field "status" must be one of \["continue","done"\]/);
  });

  it("stops planning after maxWaves and asks for the final response", async () => {
    const wave = plan("continue", [{ id: "h", tool: "calendar.resolve_holiday", args: { holiday_name: "Purim" } }]);
    const { model, holder } = observedScript([wave, wave, "Purim dates found."]);
    const agent = new Agent({ model: planToolCalling(model, { maxWaves: 2 }), tools: hotelTools(() => 1).tools, loopDetection: false });
    const result = await agent.run("Purim?");
    assert.equal(result.text, "Purim dates found.");
    assert.equal(result.toolRounds, 2);
    assert.equal(holder.current!.requests.length, 3);
  });

  it("relays an inner error and ends with an aborted error when the signal is already aborted", async () => {
    const failing: Model = {
      provider: "test",
      modelId: "failing",
      async *stream() {
        yield { type: "error", error: new AgentLoopError("context_length", "prompt too long", { status: 400 }) };
      },
    };
    const request = { messages: [{ role: "user" as const, content: "q" }], tools: [{ name: "t", description: "", parameters: {} }] };
    const failed = await collect(planToolCalling(failing), request);
    assert.equal(failed.length, 1);
    assert.ok(failed[0].type === "error" && failed[0].error.kind === "context_length");

    const controller = new AbortController();
    controller.abort();
    const scripted = new ScriptedModel([plan("done", [])]);
    const aborted = await collect(planToolCalling(scripted), { ...request, signal: controller.signal });
    assert.ok(aborted.at(-1)?.type === "error" && (aborted.at(-1) as { error: AgentLoopError }).error.kind === "aborted");
    assert.equal(scripted.requests.length, 0);
  });

  it("rejects bad options with a clear message", () => {
    assert.throws(() => planToolCalling(new ScriptedModel([]), { maxWaves: 0 }), /maxWaves must be a positive integer/);
    assert.throws(() => planToolCalling(new ScriptedModel([]), { maxRepairs: -1 }), /maxRepairs must be a non-negative integer/);
  });
});

// The seeds' hotel scenarios (seed 001) through the public API, on the example's real tools.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEMO_TODAY, HOTEL_SCRIPT, hotelAgent } from "../../examples/hotel/agent.js";
import { ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

const inputs = { today: DEMO_TODAY };

test("one wave: dates already known → one availability check, then the answer", async () => {
  const model = new ScriptedModel([
    calls(["pms.get_availability", { check_in: "2026-11-27", check_out: "2026-11-29" }]),
    "The Standard Twin and the Family Suite are free.",
  ]);
  const run = hotelAgent({ model }).run("Check availability for November 27-29", { inputs });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.toolRounds, 1);
  assert.equal(result.turns, 2);
  const [end] = ofType(events, "tool-end");
  assert.equal(end.isError, false);
  assert.deepEqual(
    JSON.parse(end.output).rooms.map((room: { id: string }) => room.id),
    ["std-102", "fam-301"],
  );
  assert.equal(result.text, "The Standard Twin and the Family Suite are free.");
});

test("two waves: the holiday is resolved first, then its availability is checked", async () => {
  const model = new ScriptedModel([
    calls(["calendar.resolve_holiday", { holiday_name: "Hanukkah" }]),
    calls(["pms.get_availability", { check_in: "2026-12-04", check_out: "2026-12-05" }]),
    "Three rooms are free on the first night of Hanukkah.",
  ]);
  const run = hotelAgent({ model }).run("one night in Hanukkah", { inputs });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(
    ofType(events, "progress").map((block) => [block.step, block.target]),
    [
      [1, "calendar.resolve_holiday"],
      [2, "pms.get_availability"],
    ],
  );
  // The second model call saw the first wave's result, right after the call that asked for it.
  const second = model.requests[1].messages;
  assert.equal(second.at(-2)?.role, "assistant");
  assert.deepEqual(second.at(-1), {
    role: "tool",
    toolCallId: (second.at(-2) as { content: Array<{ id: string }> }).content[0].id,
    toolName: "calendar.resolve_holiday",
    content: "Hanukkah is from 2026-12-04 to 2026-12-11",
  });
  const ends = ofType(events, "tool-end");
  assert.equal(ends[0].output, "Hanukkah is from 2026-12-04 to 2026-12-11");
  assert.equal(JSON.parse(ends[1].output).rooms.length, 3);
});

test("parallel resolution: two date tools in wave 1, two availability checks in wave 2, progress blocks share a step", async () => {
  const model = new ScriptedModel(HOTEL_SCRIPT);
  const agent = hotelAgent({ model });
  const run = agent.run("I need availability for Hanukkah and also next weekend", { inputs });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.turns, 3);
  assert.equal(result.toolRounds, 2);
  assert.equal(result.toolCalls, 4);
  const progress = ofType(events, "progress").map(({ type, step, max_steps, action, target }) => ({ type, step, max_steps, action, target }));
  assert.deepEqual(progress, [
    { type: "progress", step: 1, max_steps: 5, action: "tool_call", target: "calendar.resolve_holiday" },
    { type: "progress", step: 1, max_steps: 5, action: "tool_call", target: "calendar.resolve_date_hint" },
    { type: "progress", step: 2, max_steps: 5, action: "tool_call", target: "pms.get_availability" },
    { type: "progress", step: 2, max_steps: 5, action: "tool_call", target: "pms.get_availability" },
  ]);
  // The model's third call carries both waves' results, in the order it asked for them.
  const toolResults = result.messages.filter((message): message is ToolResultMessage => message.role === "tool");
  assert.deepEqual(
    toolResults.map((message) => message.toolCallId),
    ["call_holiday", "call_weekend", "call_avail_hanukkah", "call_avail_weekend"],
  );
  assert.equal(toolResults[1].content, "Next weekend is 2026-11-27 to 2026-11-29");
  assert.match(result.text, /^Here is what I found/);
});

test("the bound `today` input is hidden from the model and injected into the calendar tools", async () => {
  const model = new ScriptedModel([calls(["calendar.resolve_date_hint", { hint: "tomorrow", today: "1999-01-01" }]), "ok"]);
  const run = hotelAgent({ model }).run("tomorrow?", { inputs });
  const result = await run;
  const definition = model.requests[0].tools?.find((tool) => tool.name === "calendar.resolve_date_hint");
  assert.ok(definition);
  assert.deepEqual(Object.keys(definition.parameters.properties as object), ["hint"]);
  assert.deepEqual(definition.parameters.required, ["hint"]);
  const toolResult = result.messages.find((message): message is ToolResultMessage => message.role === "tool");
  assert.equal(toolResult?.content, "Tomorrow is 2026-11-22");
});

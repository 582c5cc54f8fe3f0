// Bound parameters (src/loop/bindings.ts, `Tool.bindings`): hidden from the schema the model sees
// (properties and `required`), injected from the run's inputs over whatever the model sent, left to
// the model when the input is missing.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, defineTool, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls } from "./helpers.js";

const toolResults = (messages: Array<{ role: string }>) => messages.filter((m): m is ToolResultMessage => m.role === "tool");

function booking(bindings?: Record<string, string>, parameters?: Record<string, unknown>) {
  return defineTool({
    name: "book",
    description: "books a room",
    parameters: parameters ?? {
      type: "object",
      properties: { hotel: { type: "string" }, guest: { type: "string" }, nights: { type: "integer" } },
      required: ["hotel", "guest", "nights"],
    },
    bindings,
    execute: (args) => JSON.stringify(args),
  });
}

test("bound parameters are hidden from the model: out of properties and required, the rest as written", async () => {
  const model = new ScriptedModel(["ok"]);
  await new Agent({ model, tools: [booking({ hotel: "hotel_id", guest: "user" })] }).run("go", { inputs: { hotel_id: "h1", user: "ada" } });
  assert.deepEqual(model.requests[0]!.tools![0]!.parameters, {
    type: "object",
    properties: { nights: { type: "integer" } },
    required: ["nights"],
  });
});

test("without bindings, or with none listed, the model sees the schema unchanged; a schema without required gets none", async () => {
  for (const bindings of [undefined, {}]) {
    const model = new ScriptedModel(["ok"]);
    await new Agent({ model, tools: [booking(bindings)] }).run("go");
    assert.deepEqual(model.requests[0]!.tools![0]!.parameters, {
      type: "object",
      properties: { hotel: { type: "string" }, guest: { type: "string" }, nights: { type: "integer" } },
      required: ["hotel", "guest", "nights"],
    });
  }
  const model = new ScriptedModel(["ok"]);
  await new Agent({ model, tools: [booking({ hotel: "hotel_id" }, { type: "object", properties: { hotel: { type: "string" }, nights: { type: "integer" } } })] }).run("go");
  assert.deepEqual(model.requests[0]!.tools![0]!.parameters, { type: "object", properties: { nights: { type: "integer" } } });
  // A schema without properties: bound names removed from nothing.
  const bare = new ScriptedModel(["ok"]);
  await new Agent({ model: bare, tools: [booking({ hotel: "hotel_id" }, { type: "object", required: ["hotel", "x"] })] }).run("go");
  assert.deepEqual(bare.requests[0]!.tools![0]!.parameters, { type: "object", properties: {}, required: ["x"] });
});

test("a bound value comes from the run's inputs and overrides the model's; a missing input leaves the model's value", async () => {
  const tool = booking({ hotel: "hotel_id", guest: "user" });
  const script = [calls(["book", { hotel: "forged", guest: "mallory", nights: 2 }, "a"]), "done"];
  const result = await new Agent({ model: new ScriptedModel(script), tools: [tool] }).run("go", { inputs: { hotel_id: "h1" } });
  assert.deepEqual(JSON.parse(String(toolResults(result.messages)[0]!.content)), { hotel: "h1", guest: "mallory", nights: 2 });
  const both = await new Agent({ model: new ScriptedModel(script), tools: [tool] }).run("go", { inputs: { hotel_id: "h2", user: "ada" } });
  assert.deepEqual(JSON.parse(String(toolResults(both.messages)[0]!.content)), { hotel: "h2", guest: "ada", nights: 2 });
  const unbound = await new Agent({ model: new ScriptedModel(script), tools: [booking()] }).run("go", { inputs: { hotel_id: "h3" } });
  assert.deepEqual(JSON.parse(String(toolResults(unbound.messages)[0]!.content)), { hotel: "forged", guest: "mallory", nights: 2 });
});

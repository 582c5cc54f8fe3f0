// invokeAgent against the Prompty specification's agent-loop sections (§9, §12.4, §13).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { defineTool } from "../../src/tools/tool.js";
import {
  invokeAgent,
  type PromptyEventData,
  type PromptyEventType,
  PromptyRunError,
  parsePrompty,
  Steering,
  startAgent,
} from "../../src/prompty/index.js";

const call = (name: string, args: unknown, id = "call_1") => JSON.stringify({ tool_calls: [{ id, name, arguments: args }] });
const calls = (...list: Array<[string, unknown, string]>) => JSON.stringify({ tool_calls: list.map(([name, args, id]) => ({ id, name, arguments: args })) });

const weather = (extra = "") =>
  parsePrompty(`---
name: weather
${extra}
tools:
  - name: get_weather
    kind: function
    parameters:
      - name: city
        kind: string
---
system:
You report weather.

user:
Weather in Oslo?
`);

type Recorded = { type: PromptyEventType; data: any };
function recorder() {
  const events: Recorded[] = [];
  const onEvent = <T extends PromptyEventType>(type: T, data: PromptyEventData[T]) => {
    events.push({ type, data });
  };
  return { events, onEvent, types: () => events.map((event) => event.type) };
}

describe("invokeAgent events (§13.1)", () => {
  it("reports tool calls, results, message updates, tokens, and done last with the response and messages", async () => {
    const { events, onEvent, types } = recorder();
    const model = new ScriptedModel([call("get_weather", { city: "Oslo" }), "It is cold in Oslo."]);
    const result = await invokeAgent(weather(), {}, { get_weather: ({ city }) => `${String(city)}: -3C` }, { model, onEvent });
    assert.equal(result.text, "It is cold in Oslo.");
    const start = events.find((event) => event.type === "tool_call_start")!;
    assert.deepEqual(start.data, { name: "get_weather", arguments: '{"city":"Oslo"}' });
    const toolResult = events.find((event) => event.type === "tool_result")!;
    assert.deepEqual(toolResult.data, { name: "get_weather", result: "Oslo: -3C" });
    assert.ok(types().indexOf("tool_call_start") < types().indexOf("tool_result"));
    // One messages_updated: after the tool result joined the messages, before the answer streams
    // (none for the input, the tool call or the answer, as the specification's vectors have it).
    const updates = events.filter((event) => event.type === "messages_updated");
    assert.deepEqual(
      updates.map((event) => event.data.messages.map((message: { role: string }) => message.role)),
      [["system", "user", "assistant", "tool"]],
    );
    assert.ok(events.indexOf(updates[0]!) < types().indexOf("token"));
    assert.deepEqual(events[0], { type: "status", data: { message: "Starting agent loop" } });
    assert.equal(
      events
        .filter((event) => event.type === "token")
        .map((event) => event.data.token)
        .join(""),
      "It is cold in Oslo.",
    );
    const done = events.at(-1)!;
    assert.equal(done.type, "done");
    assert.equal(done.data.response, "It is cold in Oslo.");
    assert.deepEqual(done.data.messages, result.messages);
  });

  it("a callback that throws does not stop the loop", async () => {
    const model = new ScriptedModel(["fine"]);
    const result = await invokeAgent(weather(), {}, undefined, {
      model,
      onEvent: () => {
        throw new Error("ui broke");
      },
    });
    assert.equal(result.text, "fine");
  });

  it("stream: false in the file sends no token events, done still comes", async () => {
    const { onEvent, types } = recorder();
    const prompty = weather("stream: false");
    assert.equal(prompty.stream, false);
    await invokeAgent(prompty, {}, undefined, { model: new ScriptedModel(["whole answer"]), onEvent });
    assert.ok(!types().includes("token"));
    assert.equal(types().at(-1), "done");
  });

  it("model.options.stream: false is read too; a bad value is refused naming the field", () => {
    assert.equal(weather("model:\n  options:\n    stream: false").stream, false);
    assert.throws(() => weather("stream: maybe"), /stream in the prompty text must be true or false, got "maybe"/);
  });
});

describe("invokeAgent error rules (§9.9, §12.4)", () => {
  it("a tool that throws becomes the result \"Error calling '<name>': <type>: <message>\" and the loop goes on", async () => {
    const { onEvent, types } = recorder();
    const model = new ScriptedModel([call("get_weather", { city: "Oslo" }), "Sorry, no data."]);
    const result = await invokeAgent(
      weather(),
      {},
      {
        get_weather: () => {
          throw new Error("station offline");
        },
      },
      { model, onEvent },
    );
    assert.equal(result.text, "Sorry, no data.");
    const sent = model.requests[1]!.messages.at(-1)!;
    assert.equal(sent.role, "tool");
    assert.equal(sent.content, "Error calling 'get_weather': Error: station offline");
    // As in the vectors (events_error_logged): a tool failure is its result, not an error event.
    assert.deepEqual(
      types().filter((type) => type !== "token"),
      ["status", "tool_call_start", "tool_result", "messages_updated", "done"],
    );
  });

  it("a call to a tool the prompty does not have raises Tool not registered: <name>; the wave's other calls do not run", async () => {
    const { onEvent, types } = recorder();
    const ran: string[] = [];
    const model = new ScriptedModel([calls(["ghost", {}, "c1"], ["get_weather", { city: "Oslo" }, "c2"]), "never"]);
    await assert.rejects(
      invokeAgent(weather(), {}, { get_weather: () => ran.push("get_weather") && "ok" }, { model, onEvent, parallelToolCalls: true }),
      (error: unknown) => {
        assert.ok(error instanceof PromptyRunError);
        assert.equal(error.message, "Tool not registered: ghost");
        assert.equal(error.kind, "configuration");
        return true;
      },
    );
    assert.deepEqual(ran, []);
    assert.equal(model.requests.length, 1, "no further model call");
    assert.ok(!types().includes("cancelled"));
    assert.ok(!types().includes("done"));
  });

  it("iterations count tool rounds: after N rounds, a model call that asks for more raises 'Agent loop exceeded N iterations' without running them", async () => {
    let executions = 0;
    const model = new ScriptedModel([call("get_weather", { city: "a" }, "c1"), call("get_weather", { city: "b" }, "c2"), call("get_weather", { city: "c" }, "c3")]);
    await assert.rejects(
      invokeAgent(weather("maxIterations: 2"), {}, { get_weather: () => `run ${++executions}` }, { model }),
      /^PromptyRunError: Agent loop exceeded 2 iterations$|Agent loop exceeded 2 iterations/,
    );
    assert.equal(executions, 2);
    assert.equal(model.requests.length, 3);
  });

  it("a refusal is raised as Model refused: <message>", async () => {
    const refusing: Model = {
      provider: "test",
      modelId: "careful",
      async *stream(): AsyncIterable<ModelEvent> {
        yield { type: "error", error: new AgentLoopError("refusal", "test refused to answer: not allowed") };
      },
    };
    await assert.rejects(invokeAgent(weather(), {}, undefined, { model: refusing }), { message: "Model refused: test refused to answer: not allowed" });
  });
});

describe("invokeAgent cancellation, steering, parallel tools (§13.2, §13.5, §13.6)", () => {
  it("an abort during a tool emits cancelled and makes no further model call", async () => {
    const { onEvent, types } = recorder();
    const controller = new AbortController();
    const model = new ScriptedModel([call("get_weather", { city: "Oslo" }), "never"]);
    const slow = async () => {
      controller.abort("user stopped");
      return "late";
    };
    await assert.rejects(invokeAgent(weather(), {}, { get_weather: slow }, { model, onEvent, signal: controller.signal }), { kind: "aborted" });
    assert.equal(types().at(-1), "cancelled");
    assert.equal(model.requests.length, 1);
  });

  it("an abort between two tools of a sequential wave: only the first call's events, then cancelled with the reason", async () => {
    const { events, onEvent } = recorder();
    const controller = new AbortController();
    const ran: string[] = [];
    const model = new ScriptedModel([calls(["get_weather", { city: "Oslo" }, "c1"], ["get_weather", { city: "Bergen" }, "c2"]), "never"]);
    const first = (type: string, data: unknown) => {
      onEvent(type as PromptyEventType, data as never);
      if (type === "tool_result") controller.abort("stop after the first");
    };
    await assert.rejects(
      invokeAgent(weather(), {}, { get_weather: ({ city }) => ran.push(String(city)) && `${String(city)}: -3C` }, { model, onEvent: first, signal: controller.signal }),
      { kind: "aborted" },
    );
    assert.deepEqual(ran, ["Oslo"]);
    assert.deepEqual(events, [
      { type: "status", data: { message: "Starting agent loop" } },
      { type: "tool_call_start", data: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
      { type: "tool_result", data: { name: "get_weather", result: "Oslo: -3C" } },
      { type: "cancelled", data: { reason: "stop after the first" } },
    ]);
  });

  it("steering messages join as user messages between iterations: the tool results, then a status, then the steering, each its own update", async () => {
    const { events, onEvent } = recorder();
    const steering = new Steering();
    steering.send("Also say the wind.");
    const model = new ScriptedModel([call("get_weather", { city: "Oslo" }), "Cold and windy."]);
    await invokeAgent(weather(), {}, { get_weather: () => "-3C, wind 10 m/s" }, { model, onEvent, steering });
    assert.equal(steering.hasPending, false);
    const second = model.requests[1]!.messages;
    assert.deepEqual(second.at(-1), { role: "user", content: "Also say the wind." });
    const roles = (event: Recorded) => (event.type === "messages_updated" ? event.data.messages.map((message: { role: string }) => message.role).join(",") : event.data.message);
    assert.deepEqual(
      events.filter((event) => event.type === "messages_updated" || event.type === "status").map(roles),
      ["Starting agent loop", "system,user,assistant,tool", "Injecting steering message", "system,user,assistant,tool,user"],
    );
  });

  it("tool calls run one after another by default, concurrently with parallelToolCalls; results keep the call order", async () => {
    const timeline: string[] = [];
    const handler = async ({ city }: Record<string, unknown>) => {
      timeline.push(`start ${String(city)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      timeline.push(`end ${String(city)}`);
      return String(city);
    };
    const script = () => new ScriptedModel([calls(["get_weather", { city: "a" }, "c1"], ["get_weather", { city: "b" }, "c2"]), "done"]);
    await invokeAgent(weather(), {}, { get_weather: handler }, { model: script() });
    assert.deepEqual(timeline, ["start a", "end a", "start b", "end b"]);
    timeline.length = 0;
    const model = script();
    await invokeAgent(weather(), {}, { get_weather: handler }, { model, parallelToolCalls: true });
    assert.deepEqual(timeline.slice(0, 2), ["start a", "start b"]);
    const results = model.requests[1]!.messages.filter((message) => message.role === "tool");
    assert.deepEqual(
      results.map((message) => message.content),
      ["a", "b"],
    );
  });
});

describe("invokeAgent context window (§13.3)", () => {
  const chatty = (budget: number) =>
    parsePrompty(`---
name: chatty
contextBudget: ${budget}
---
system:
Be brief.

user:
${"Tell me about fjords. ".repeat(20)}

assistant:
${"Fjords are long. ".repeat(20)}

user:
${"And glaciers? ".repeat(20)}

assistant:
${"Glaciers carve. ".repeat(20)}

user:
Summarize.
`);

  it("over the character budget the oldest messages become a system message [Summary of earlier conversation] … after the system messages", async () => {
    const { events, onEvent, types } = recorder();
    const model = new ScriptedModel(["Fjords and glaciers."]);
    const result = await invokeAgent(chatty(700), {}, undefined, { model, onEvent });
    const sent = model.requests[0]!.messages;
    assert.deepEqual(sent[0], { role: "system", content: "Be brief." });
    assert.equal(sent[1]!.role, "system");
    assert.match(String(sent[1]!.content), /^\[Summary of earlier conversation\] User asked: Tell me about fjords\. [\s\S]*\nAssistant: Fjords are long\. /);
    assert.deepEqual(sent.at(-1), { role: "user", content: "Summarize." });
    const start = types().indexOf("compaction_start");
    assert.ok(start >= 0);
    assert.equal(types()[start + 1], "compaction_complete");
    assert.equal(types()[start + 2], "messages_updated");
    const complete = events[start + 1]!.data;
    assert.ok(complete.removed >= 2, JSON.stringify(complete));
    assert.equal(complete.remaining, sent.length - 1);
    assert.deepEqual(events[start + 2]!.data.messages, sent);
    // The run's messages keep everything.
    assert.equal(result.messages.length, 7);
  });

  it("within the budget nothing is trimmed; a bad budget is refused naming the field", async () => {
    const { onEvent, types } = recorder();
    await invokeAgent(chatty(100_000), {}, undefined, { model: new ScriptedModel(["ok"]), onEvent });
    assert.ok(!types().includes("compaction_start"));
    assert.throws(() => chatty(0), /contextBudget in the prompty text must be a positive integer \(characters\), got 0/);
  });
});

describe("invokeAgent frontmatter: outputs and guardrails", () => {
  it("outputs make the final answer structured (result.output)", async () => {
    const prompty = parsePrompty(`---
name: structured
outputs:
  - name: city
    kind: string
  - name: celsius
    kind: number
---
user:
Weather?
`);
    const model = new ScriptedModel(['{"city":"Oslo","celsius":-3}']);
    const result = await invokeAgent(prompty, {}, undefined, { model });
    assert.deepEqual(result.output, { city: "Oslo", celsius: -3 });
    assert.match(String(model.requests[0]!.messages[0]!.content), /"required":\["city","celsius"\],"additionalProperties":false/);
  });

  it("guardrails in the frontmatter are read as written (handed to AgentConfig.guardrails)", () => {
    const prompty = weather("guardrails:\n  tool:\n    deny: [delete_*]\n    reason: no deleting");
    assert.deepEqual(prompty.guardrails, { tool: { deny: ["delete_*"], reason: "no deleting" } });
  });

  it("startAgent streams the same run; core tools passed in a list get the Prompty failure text too", async () => {
    const broken = defineTool({
      name: "broken",
      description: "fails",
      parameters: { type: "object", properties: {} },
      execute: () => {
        throw new Error("nope");
      },
    });
    const model = new ScriptedModel([call("broken", {}), "ok"]);
    const { run } = await startAgent(weather(), {}, [broken], { model });
    const result = await run;
    assert.equal(result.state, "COMPLETED");
    assert.equal(model.requests[1]!.messages.at(-1)!.content, "Error calling 'broken': Error: nope");
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { delegateTool } from "../../src/agents/index.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import type { DelegateTarget, RunInfo } from "../../src/loop/types.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { collectAll as collect } from "../support.js";

const call = (name: string, args: unknown, id = "call_1") => JSON.stringify({ tool_calls: [{ id, name, arguments: args }] });
const delegate = (agent: string, task: string, id = "call_1") => call(`delegate_to_${agent}`, { task }, id);

/** A target that forwards to an agent built later (to make cycles). */
function lazyTarget(name: string, get: () => Agent): DelegateTarget {
  return { name, description: `lazy ${name}`, run: (input, options) => get().run(input, options) };
}

/** Every tool-end event at any depth, with the agent path that produced it. */
function toolEnds(events: LoopEvent[], path: string[] = []): Array<{ path: string[]; event: Extract<LoopEvent, { type: "tool-end" }> }> {
  const found: Array<{ path: string[]; event: Extract<LoopEvent, { type: "tool-end" }> }> = [];
  for (const event of events) {
    if (event.type === "tool-end") found.push({ path, event });
    if (event.type === "nested") found.push(...toolEnds([event.event], [...path, event.agent]));
  }
  return found;
}

describe("delegateTool (local sub-agents)", () => {
  it("runs the sub-agent on the task, nests its events and returns its answer", async () => {
    const workerModel = new ScriptedModel(["Processed: all 3 records."]);
    const seen: RunInfo[] = [];
    const inputs: string[] = [];
    const observedWorker = new Agent({
      name: "worker",
      description: "Processes records.",
      instructions: "You process.",
      model: workerModel,
      observers: [
        {
          onEvent: (event, info) => {
            if (event.type === "run-start") {
              seen.push(info);
              inputs.push(event.input);
            }
          },
        },
      ],
    });
    const lead = new Agent({
      name: "lead",
      model: new ScriptedModel([delegate("worker", "process the records"), "Complete."]),
      subAgents: [observedWorker],
    });
    assert.deepEqual(
      lead.toolDefinitions().map((tool) => [tool.name, tool.description]),
      [["delegate_to_worker", "Processes records."]],
    );
    // One `task` string parameter.
    const parameters = lead.toolDefinitions()[0].parameters as { properties: Record<string, { type: string }>; required: string[] };
    assert.deepEqual(Object.keys(parameters.properties), ["task"]);
    assert.equal(parameters.properties.task.type, "string");
    assert.deepEqual(parameters.required, ["task"]);
    const run = lead.run("go", { services: { marker: 42 } });
    const events = await collect(run);
    const result = await run;
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "Complete.");

    const start = events.find((event) => event.type === "tool-start");
    assert.equal(start?.type === "tool-start" && start.action, "delegate");
    assert.equal(start?.type === "tool-start" && start.kind, "agent");
    const progress = events.find((event) => event.type === "progress");
    assert.deepEqual(progress && { action: (progress as any).action, target: (progress as any).target }, { action: "delegate", target: "worker" });
    const end = events.find((event) => event.type === "tool-end");
    assert.ok(end?.type === "tool-end");
    assert.equal(end.output, "Processed: all 3 records.");
    assert.equal(end.isError, false);
    assert.equal(end.action, "delegate");

    const nested = events.filter((event) => event.type === "nested");
    assert.ok(nested.length > 3);
    assert.ok(nested.every((event) => event.type === "nested" && event.agent === "worker" && event.toolCallId === "call_1"));
    const childTypes = nested.map((event) => (event.type === "nested" ? event.event.type : ""));
    assert.equal(childTypes[0], "run-start");
    assert.equal(childTypes.at(-1), "run-end");
    // The nested events come before the tool's end in the parent's stream.
    assert.ok(events.indexOf(nested.at(-1)!) < events.indexOf(end));

    // The child saw the task as its input, ran one level deeper, knows its parent run.
    assert.equal(seen.length, 1);
    assert.equal(seen[0].depth, 1);
    assert.equal(seen[0].parentRunId, run.id);
    assert.deepEqual(inputs, ["process the records"]);
  });

  it("passes the services and the agent path on to the child", async () => {
    let childContext: { path: readonly string[]; depth: number; services: Record<string, unknown> } | undefined;
    const probe = {
      name: "probe",
      description: "records its context",
      parameters: { type: "object", properties: {} },
      execute: (_args: unknown, context: { agentPath: readonly string[]; depth: number; services: Record<string, unknown> }) => {
        childContext = { path: context.agentPath, depth: context.depth, services: context.services };
        return "ok";
      },
    };
    const worker = new Agent({ name: "worker", model: new ScriptedModel([call("probe", {}), "done"]), tools: [probe] });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([delegate("worker", "probe it"), "ok"]), subAgents: [worker] });
    const services = { traceHeaders: () => ({ traceparent: "00-abc-def-01" }) };
    const result = await lead.run("go", { services });
    assert.equal(result.state, "COMPLETED");
    assert.deepEqual(childContext?.path, ["lead", "worker"]);
    assert.equal(childContext?.depth, 1);
    assert.equal(childContext?.services, services);
  });

  it("returns an error result naming the state and reason when the sub-agent does not complete", async () => {
    const looping = { name: "noop", description: "nothing", parameters: { type: "object", properties: {} }, execute: () => "again" };
    const worker = new Agent({
      name: "worker",
      model: new ScriptedModel([call("noop", {}, "a"), call("noop", {}, "b")]),
      tools: [looping],
      maxTurns: 1,
    });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([delegate("worker", "try"), "The worker gave up."]), subAgents: [worker] });
    const run = lead.run("go");
    const events = await collect(run);
    const result = await run;
    assert.equal(result.state, "COMPLETED");
    const end = toolEnds(events).find((found) => found.path.length === 0)!.event;
    assert.equal(end.isError, true);
    assert.match(end.output, /^Sub-agent "worker" ended with state TURN_LIMIT: maxTurns \(1\) reached/);
  });

  it("refuses delegation deeper than the default limit of 3", async () => {
    // a → b → c → d → e: d runs at depth 3; its delegation to e (depth 4) is refused.
    const e = new Agent({ name: "e", model: new ScriptedModel(["e answered"]) });
    const d = new Agent({ name: "d", model: new ScriptedModel([delegate("e", "go deeper"), "d done"]), subAgents: [e] });
    const c = new Agent({ name: "c", model: new ScriptedModel([delegate("d", "go"), "c done"]), subAgents: [d] });
    const b = new Agent({ name: "b", model: new ScriptedModel([delegate("c", "go"), "b done"]), subAgents: [c] });
    const a = new Agent({ name: "a", model: new ScriptedModel([delegate("b", "go"), "a done"]), subAgents: [b] });
    const run = a.run("start");
    const events = await collect(run);
    assert.equal((await run).state, "COMPLETED");
    const ends = toolEnds(events);
    const refused = ends.find((found) => found.event.name === "delegate_to_e")!;
    assert.deepEqual(refused.path, ["b", "c", "d"]);
    assert.equal(refused.event.isError, true);
    assert.equal(
      refused.event.output,
      'Delegation refused: "e" would run at depth 4, beyond the maximum delegation depth of 3 (path: a > b > c > d).',
    );
    // Every shallower delegation worked.
    for (const name of ["delegate_to_b", "delegate_to_c", "delegate_to_d"]) {
      assert.equal(ends.find((found) => found.event.name === name)?.event.isError, false, name);
    }
  });

  it("honours a custom maxDepth", async () => {
    const c = new Agent({ name: "c", model: new ScriptedModel(["c"]) });
    const b = new Agent({ name: "b", model: new ScriptedModel([delegate("c", "x"), "b"]), tools: [delegateTool(c, { maxDepth: 1 })] });
    const a = new Agent({ name: "a", model: new ScriptedModel([delegate("b", "x"), "a"]), subAgents: [b] });
    const events = await collect(a.run("go"));
    const refused = toolEnds(events).find((found) => found.event.name === "delegate_to_c")!;
    assert.match(refused.event.output, /beyond the maximum delegation depth of 1/);
  });

  it("AgentConfig.maxDelegationDepth sets the limit of the agent's subAgents", async () => {
    const c = new Agent({ name: "c", model: new ScriptedModel(["c"]) });
    const b = new Agent({ name: "b", model: new ScriptedModel([delegate("c", "x"), "b"]), subAgents: [c], maxDelegationDepth: 1 });
    const a = new Agent({ name: "a", model: new ScriptedModel([delegate("b", "x"), "a"]), subAgents: [b] });
    const ends = toolEnds(await collect(a.run("go")));
    assert.equal(ends.find((found) => found.event.name === "delegate_to_b")?.event.isError, false);
    assert.match(ends.find((found) => found.event.name === "delegate_to_c")!.event.output, /"c" would run at depth 2, beyond the maximum delegation depth of 1/);
  });

  it("refuses an agent delegating to itself", async () => {
    let self: Agent | undefined;
    self = new Agent({
      name: "solo",
      model: new ScriptedModel([delegate("solo", "again"), "stopped"]),
      subAgents: [lazyTarget("solo", () => self!)],
    });
    const run = self.run("go");
    const events = await collect(run);
    assert.equal((await run).text, "stopped");
    const [refused] = toolEnds(events);
    assert.equal(refused.event.isError, true);
    assert.equal(
      refused.event.output,
      'Delegation refused: "solo" is already running in this delegation chain (solo > solo); delegating to it again would be a cycle.',
    );
    assert.equal(events.filter((event) => event.type === "nested").length, 0);
  });

  it("refuses an indirect cycle a → b → a", async () => {
    let a: Agent | undefined;
    const b = new Agent({ name: "b", model: new ScriptedModel([delegate("a", "back"), "b done"]), subAgents: [lazyTarget("a", () => a!)] });
    a = new Agent({ name: "a", model: new ScriptedModel([delegate("b", "forth"), "a done"]), subAgents: [b] });
    const events = await collect(a.run("go"));
    const refused = toolEnds(events).find((found) => found.event.name === "delegate_to_a")!;
    assert.deepEqual(refused.path, ["b"]);
    assert.match(refused.event.output, /"a" is already running in this delegation chain \(a > b > a\)/);
  });

  it("aborts the sub-agent with the parent", async () => {
    let childEnded: (state: string) => void = () => {};
    const childEnd = new Promise<string>((resolve) => (childEnded = resolve));
    const worker = new Agent({
      name: "worker",
      model: new ScriptedModel(["one two three four five six seven eight nine ten eleven twelve"], { chunkDelayMs: 30 }),
      observers: [{ onEvent: (event) => (event.type === "run-end" ? childEnded(event.state) : undefined) }],
    });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([delegate("worker", "talk"), "never"]), subAgents: [worker] });
    const run = lead.run("go");
    const events: LoopEvent[] = [];
    for await (const event of run) {
      events.push(event);
      if (event.type === "nested" && event.event.type === "text-delta") run.abort("user stopped");
    }
    const result = await run;
    assert.equal(result.state, "ABORTED");
    // The parent's stream ends with its own run-end; the child's end is seen on the child's own events.
    assert.equal(events.at(-1)?.type, "run-end");
    assert.equal(await childEnd, "ABORTED");
  });

  it("returns an error result for an empty task and rejects a target without a name", async () => {
    const worker = new Agent({ name: "worker", model: new ScriptedModel(["never"]) });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([delegate("worker", "  "), "ok"]), subAgents: [worker] });
    const events = await collect(lead.run("go"));
    const [end] = toolEnds(events);
    assert.equal(end.event.isError, true);
    assert.equal(end.event.output, 'Delegation to "worker" needs a non-empty "task" string.');
    assert.throws(() => delegateTool({ name: "", description: "", run: worker.run.bind(worker) }), /non-empty name/);
  });
});

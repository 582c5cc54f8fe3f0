import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { AgentLoopError } from "../../src/errors.js";
import type { LoopEvent } from "../../src/loop/events.js";
import type { Message } from "../../src/messages.js";
import type { ModelRequest } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import {
  invokeAgent,
  loadPrompty,
  PromptyRunError,
  parsePrompty,
  prepare,
  type PromptyAgent,
  registerTool,
  registerToolHandler,
  resolvePromptyModel,
  runPrompty,
  startAgent,
} from "../../src/prompty/index.js";

const fixtures = join(fileURLToPath(new URL(".", import.meta.url)), "fixtures");
const fixture = (name: string) => join(fixtures, name);
const env = { PROMPTY_TEST_KEY: "test-key" };
const call = (name: string, args: unknown, id = "call_1") => ({ tool_calls: [{ id, name, arguments: args }] });
const script = (...entries: unknown[]) => entries.map((entry) => (typeof entry === "string" ? entry : JSON.stringify(entry)));

/** Scripted models per prompty name, so parent and children answer from their own scripts. */
function modelsByName(scripts: Record<string, unknown[]>) {
  const models = new Map<string, ScriptedModel>();
  const requests: Record<string, ModelRequest[]> = {};
  const pick = (agent: PromptyAgent) => {
    let model = models.get(agent.name);
    if (!model) {
      const entries = scripts[agent.name];
      if (!entries) throw new Error(`no script for ${agent.name}`);
      model = new ScriptedModel(script(...entries));
      models.set(agent.name, model);
    }
    const scripted = model;
    // The requests of every run of this agent.
    requests[agent.name] ??= [];
    const stream = (request: ModelRequest) => {
      requests[agent.name].push(request);
      return scripted.stream(request);
    };
    return { provider: scripted.provider, modelId: scripted.modelId, stream } as never;
  };
  return { pick, requests };
}

const textOfMessage = (message: Message) =>
  typeof message.content === "string" ? message.content : message.content.map((part) => ("text" in part ? part.text : "")).join("");

describe("loadPrompty", () => {
  it("reads the frontmatter, resolves env references and keeps the body as the template", async () => {
    const agent = await loadPrompty(fixture("greeting.prompty"), { env: { ...env, PROMPTY_TEST_ENDPOINT: "http://127.0.0.1:4000/v1" } });
    assert.equal(agent.name, "greeting");
    assert.equal(agent.description, "Greets someone at a place.");
    assert.deepEqual(agent.model, {
      id: "gpt-4o-mini",
      provider: "openai",
      apiType: "chat",
      connection: { kind: "key", endpoint: "http://127.0.0.1:4000/v1", apiKey: "test-key" },
      options: { temperature: 0.2, maxOutputTokens: 200 },
    });
    assert.deepEqual(agent.inputs, [
      { name: "name", kind: "string", required: false, default: "World" },
      { name: "place", kind: "string", required: true },
    ]);
    assert.equal(agent.path, fixture("greeting.prompty"));
    assert.match(agent.template, /^system:\nYou are a friendly assistant in \{\{ place \}\}\./);
  });

  it("reads tools with bindings in the list, map and shorthand forms", async () => {
    const parent = await loadPrompty(fixture("parent.prompty"));
    assert.deepEqual(
      parent.tools.map((tool) => ({ name: tool.name, kind: tool.kind, bindings: tool.bindings, path: tool.path, mode: tool.mode })),
      [
        { name: "get_weather", kind: "function", bindings: { unit: "preferred_unit" }, path: undefined, mode: undefined },
        { name: "summarize", kind: "prompty", bindings: { audience: "audience" }, path: "children/summarizer.prompty", mode: "single" },
        { name: "research", kind: "prompty", bindings: {}, path: "./children/researcher.prompty", mode: "agentic" },
      ],
    );
    assert.deepEqual(
      parent.tools[0].parameters.map((parameter) => [parameter.name, parameter.kind, parameter.required]),
      [
        ["city", "string", true],
        ["unit", "string", true],
      ],
    );
    const researcher = await loadPrompty(fixture("children/researcher.prompty"));
    assert.deepEqual(researcher.tools[0].parameters, [{ name: "query", kind: "string", required: false }]);
  });

  it("uses the default of an env reference with a default, and names the variable, field and file when one is not set", async () => {
    const agent = await loadPrompty(fixture("greeting.prompty"), { env });
    assert.equal(agent.model.connection?.endpoint, "http://127.0.0.1:9/v1");
    await assert.rejects(loadPrompty(fixture("greeting.prompty"), { env: {} }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "configuration");
      assert.equal(
        error.message,
        `Environment variable PROMPTY_TEST_KEY is not set (referenced by model.connection.apiKey in ${fixture("greeting.prompty")}); set it or write ` +
          "$" +
          "{env:PROMPTY_TEST_KEY:default}",
      );
      return true;
    });
    await assert.rejects(loadPrompty(fixture("bad-env.prompty")), /Environment variable PROMPTY_TEST_SURELY_UNSET_VARIABLE is not set/);
  });

  it("names the path of a missing file, and the file of bad YAML", async () => {
    const missing = fixture("nowhere.prompty");
    await assert.rejects(loadPrompty(missing), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "not_found");
      assert.equal(error.message, `Prompty file not found: ${missing}`);
      return true;
    });
    await assert.rejects(invokeAgent(missing), new RegExp(`Prompty file not found: ${missing.replace(/[.]/g, "\\.")}`));
    await assert.rejects(loadPrompty(fixture("bad-yaml.prompty")), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.match(error.message, new RegExp(`^Invalid YAML frontmatter in ${fixture("bad-yaml.prompty").replace(/[.]/g, "\\.")}: `));
      return true;
    });
  });

  it("rejects tools without a kind or a path, and a bad mode", () => {
    assert.throws(() => parsePrompty("---\ntools:\n  - name: x\n---\nuser:\nhi", "a.prompty"), /tool "x" in a\.prompty needs a kind/);
    assert.throws(() => parsePrompty("---\ntools:\n  - name: x\n    kind: prompty\n---\nuser:\nhi"), /prompty tool "x" in the prompty text needs a path/);
    assert.throws(
      () => parsePrompty("---\ntools:\n  - name: x\n    kind: prompty\n    path: y.prompty\n    mode: loop\n---\nuser:\nhi"),
      /mode must be "single" or "agentic", got "loop"/,
    );
  });
});

describe("prepare", () => {
  it("renders the inputs with nunjucks and splits the role blocks", async () => {
    const agent = await loadPrompty(fixture("greeting.prompty"), { env });
    const { messages, inputs } = prepare(agent, { place: "Lisbon", formal: true });
    assert.deepEqual(inputs, { place: "Lisbon", formal: true, name: "World" });
    assert.deepEqual(messages, [
      { role: "system", content: "You are a friendly assistant in Lisbon.\nBe formal." },
      { role: "user", content: "Say hello to World." },
    ]);
  });

  it("treats text before the first marker as the system prompt and keeps assistant turns", async () => {
    const agent = await loadPrompty(fixture("conversation.prompty"));
    const { messages } = prepare(agent, { question: "And 3 + 3?" });
    assert.deepEqual(messages, [
      { role: "system", content: "You answer briefly." },
      { role: "user", content: "What is 2 + 2?" },
      { role: "assistant", content: [{ type: "text", text: "4." }] },
      { role: "user", content: "And 3 + 3?" },
    ]);
  });

  it("names a missing required input", async () => {
    const agent = await loadPrompty(fixture("greeting.prompty"), { env });
    assert.throws(
      () => prepare(agent, { name: "Ana" }),
      (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "invalid_request");
        assert.equal(error.message, `Missing required input "place" for prompty greeting (${fixture("greeting.prompty")})`);
        return true;
      },
    );
  });
});

describe("invokeAgent", () => {
  it("runs the prompt through the loop with the rendered messages and the file's model options", async () => {
    const { pick, requests } = modelsByName({ greeting: ["Hello, Ana!"] });
    const result = await invokeAgent(fixture("greeting.prompty"), { name: "Ana", place: "Porto" }, undefined, { model: pick, env });
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "Hello, Ana!");
    assert.deepEqual(
      result.messages.map((message) => [message.role, textOfMessage(message)]),
      [
        ["system", "You are a friendly assistant in Porto."],
        ["user", "Say hello to Ana."],
        ["assistant", "Hello, Ana!"],
      ],
    );
    assert.equal(requests.greeting.length, 1);
    assert.deepEqual(requests.greeting[0].options, { temperature: 0.2, maxOutputTokens: 200 });
    assert.equal(requests.greeting[0].tools, undefined);
  });

  it("continues the conversation of the template (earlier turns are history)", async () => {
    const { pick, requests } = modelsByName({ conversation: ["6."] });
    const result = await invokeAgent(fixture("conversation.prompty"), { question: "And 3 + 3?" }, undefined, { model: pick });
    assert.equal(result.text, "6.");
    assert.deepEqual(
      requests.conversation[0].messages.map((message) => [message.role, textOfMessage(message)]),
      [
        ["system", "You answer briefly."],
        ["user", "What is 2 + 2?"],
        ["assistant", "4."],
        ["user", "And 3 + 3?"],
      ],
    );
  });

  it("fails clearly for a missing required input and a prompt without a user block", async () => {
    await assert.rejects(invokeAgent(fixture("greeting.prompty"), {}, undefined, { model: new ScriptedModel([]), env }), /Missing required input "place"/);
    await assert.rejects(invokeAgent(fixture("no-user.prompty"), {}, undefined, { model: new ScriptedModel([]) }), /must end with a user: block/);
  });

  it("reports exactly `Agent loop exceeded 10 iterations` when the model keeps calling tools", async () => {
    const pings = Array.from({ length: 12 }, (_, index) => call("ping", {}, `call_${index}`));
    const { pick, requests } = modelsByName({ looping: pings });
    let pingCount = 0;
    await assert.rejects(
      invokeAgent(fixture("looping.prompty"), {}, { ping: () => `pong ${++pingCount}` }, { model: pick }),
      (error: unknown) => {
        assert.ok(error instanceof PromptyRunError);
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.message, "Agent loop exceeded 10 iterations");
        assert.equal(error.result.state, "ROUND_LIMIT");
        return true;
      },
    );
    // As the specification's vectors count: 10 rounds of tools; the 11th call asks for more and raises.
    assert.equal(requests.looping.length, 11);
    assert.equal(pingCount, 10);
    await assert.rejects(invokeAgent(fixture("looping.prompty"), {}, { ping: () => "pong" }, { model: pick, maxIterations: 3 }), {
      message: "Agent loop exceeded 3 iterations",
    });
  });

  it("runs a parsed prompty, takes core tools that replace declared ones, and stops on abort", async () => {
    const parsed = parsePrompty("---\nname: inline\ntools:\n  - name: get_time\n    kind: function\n---\nuser:\nWhat time is it in {{ city }}?");
    assert.equal(parsed.path, undefined);
    const { pick, requests } = modelsByName({ inline: [call("get_time", {}), "It is noon in Lima."] });
    const getTime = {
      name: "get_time",
      description: "The current time (core tool)",
      parameters: { type: "object", properties: {} },
      execute: () => "12:00",
    };
    const result = await invokeAgent(parsed, { city: "Lima" }, [getTime], { model: pick });
    assert.equal(result.text, "It is noon in Lima.");
    assert.deepEqual(
      requests.inline[0].tools?.map((tool) => [tool.name, tool.description]),
      [["get_time", "The current time (core tool)"]],
    );
    assert.equal(textOfMessage(requests.inline[0].messages[0]), "What time is it in Lima?");

    const controller = new AbortController();
    const slow = new ScriptedModel(["one two three four five six seven eight nine ten"], { chunkDelayMs: 50 });
    // Stopped as soon as the answer starts streaming.
    const stopper = { onEvent: (event: LoopEvent) => (event.type === "text-delta" ? controller.abort("user stopped") : undefined) };
    await assert.rejects(invokeAgent(parsed, { city: "Lima" }, [getTime], { model: slow, signal: controller.signal, observers: [stopper] }), (error: unknown) => {
      assert.ok(error instanceof PromptyRunError);
      assert.equal(error.result.state, "ABORTED");
      assert.equal(error.message, "Prompty inline ended with state ABORTED: aborted: user stopped");
      return true;
    });
  });

  it("uses DEBUG_MOCK_RESPONSES when no model is given", async () => {
    const previous = process.env.DEBUG_MOCK_RESPONSES;
    process.env.DEBUG_MOCK_RESPONSES = JSON.stringify(["Mocked hello."]);
    try {
      const result = await invokeAgent(fixture("greeting.prompty"), { place: "Faro" }, undefined, { env: { ...process.env, ...env } });
      assert.equal(result.text, "Mocked hello.");
    } finally {
      if (previous === undefined) delete process.env.DEBUG_MOCK_RESPONSES;
      else process.env.DEBUG_MOCK_RESPONSES = previous;
    }
  });

  it("resolves the file's model section with agentloop/providers", async () => {
    const agent = await loadPrompty(fixture("greeting.prompty"), { env: { ...env, PROMPTY_TEST_MODEL: "gpt-test" } });
    const model = await resolvePromptyModel(agent, { env });
    assert.equal(model.modelId, "gpt-test");
    assert.match(model.provider, /openai/);
    const nameless = parsePrompty("---\nname: x\n---\nuser:\nhi");
    await assert.rejects(resolvePromptyModel(nameless, { env: {} }), /Prompty x has no model.id/);
  });
});

describe("prompty tools", () => {
  it("runs function tools from runtime name handlers, with bindings from the inputs hidden from the model", async () => {
    const { pick, requests } = modelsByName({
      planner: [call("get_weather", { city: "Oslo", unit: "kelvin" }), "Pack a coat."],
    });
    const seen: unknown[] = [];
    const result = await invokeAgent(
      fixture("parent.prompty"),
      { destination: "Oslo", preferred_unit: "fahrenheit" },
      {
        get_weather: (args) => {
          seen.push(args);
          return `${args.city}: 41 ${args.unit}`;
        },
      },
      { model: pick },
    );
    assert.equal(result.text, "Pack a coat.");
    assert.deepEqual(seen, [{ city: "Oslo", unit: "fahrenheit" }]);
    const weather = requests.planner[0].tools?.find((tool) => tool.name === "get_weather");
    assert.deepEqual(weather?.parameters, {
      type: "object",
      properties: { city: { type: "string", description: "City name" } },
      required: ["city"],
    });
    const toolResult = result.messages.find((message) => message.role === "tool");
    assert.equal(toolResult && textOfMessage(toolResult), "Oslo: 41 fahrenheit");
  });

  it("runs a prompty child in single mode: one call, its inputs from the arguments and the parent's bindings", async () => {
    const { pick, requests } = modelsByName({
      planner: [call("summarize", { text: "Oslo is cold in winter and bright in summer." }), "Here is the plan."],
      summarizer: ["Cold winters, bright summers."],
    });
    const { run } = await startAgent(fixture("parent.prompty"), { destination: "Oslo", audience: "teenagers" }, { get_weather: () => "n/a" }, { model: pick });
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    const result = await run;
    assert.equal(result.text, "Here is the plan.");
    const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
    assert.equal(end.name, "summarize");
    assert.equal(end.output, "Cold winters, bright summers.");
    assert.equal(end.isError, false);
    assert.equal(end.action, "delegate");
    assert.equal(events.filter((event) => event.type === "nested").length, 0);
    assert.equal(requests.summarizer.length, 1);
    assert.deepEqual(
      requests.summarizer[0].messages.map((message) => [message.role, textOfMessage(message)]),
      [
        ["system", "Summarize for teenagers."],
        ["user", "Oslo is cold in winter and bright in summer."],
      ],
    );
    assert.equal(requests.summarizer[0].tools, undefined);
    // The model sees the child's inputs as parameters, the bound one hidden.
    const summarize = requests.planner[0].tools?.find((tool) => tool.name === "summarize");
    assert.equal(summarize?.description, "Summarizes a text for an audience.");
    assert.deepEqual(summarize?.parameters, {
      type: "object",
      properties: { text: { type: "string", description: "The text to summarize" } },
      required: ["text"],
    });
  });

  it("runs a prompty child in agentic mode: its own loop and tools, events nested in the parent's stream", async () => {
    const { pick, requests } = modelsByName({
      planner: [call("research", { topic: "fjords" }), "Visit the fjords."],
      researcher: [call("lookup", { query: "longest fjord" }, "inner_1"), "Sognefjord is the longest."],
    });
    const lookups: unknown[] = [];
    const { run } = await startAgent(
      fixture("parent.prompty"),
      { destination: "Norway" },
      {
        lookup: (args) => {
          lookups.push(args);
          return "Sognefjord, 205 km";
        },
        get_weather: () => "n/a",
      },
      { model: pick },
    );
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    const result = await run;
    assert.equal(result.text, "Visit the fjords.");
    assert.deepEqual(lookups, [{ query: "longest fjord" }]);
    const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
    assert.equal(end.output, "Sognefjord is the longest.");
    const nested = events.filter((event) => event.type === "nested") as Array<Extract<LoopEvent, { type: "nested" }>>;
    assert.ok(nested.every((event) => event.agent === "researcher"));
    assert.deepEqual(
      nested.filter((event) => event.event.type === "tool-end").map((event) => (event.event as { output: string }).output),
      ["Sognefjord, 205 km"],
    );
    assert.equal(requests.researcher.length, 2);
    assert.equal(textOfMessage(requests.researcher[0].messages[1]), "Research fjords.");
  });

  it("dispatches in two layers: a name handler wins over the kind handler; no handler is an error naming tool and kind", async () => {
    const { pick } = modelsByName({
      dispatch: [
        {
          tool_calls: [
            { id: "a", name: "query_db", arguments: { sql: "select 1" } },
            { id: "b", name: "other_db", arguments: { sql: "select 2" } },
            { id: "c", name: "mystery", arguments: {} },
          ],
        },
        "done",
      ],
    });
    const kindCalls: Array<{ tool: string; dsn: unknown; sql: unknown }> = [];
    const offKind = registerToolHandler("database", (tool, args) => {
      kindCalls.push({ tool: tool.name, dsn: (tool.raw.connection as Record<string, unknown> | undefined)?.dsn, sql: args.sql });
      return `kind handler ran ${args.sql}`;
    });
    const offName = registerTool("query_db", (args) => `name handler ran ${args.sql}`);
    try {
      const { run } = await startAgent(fixture("dispatch.prompty"), {}, undefined, { model: pick });
      const events: LoopEvent[] = [];
      for await (const event of run) events.push(event);
      const ends = Object.fromEntries(
        events.filter((event) => event.type === "tool-end").map((event) => [(event as { name: string }).name, event as Extract<LoopEvent, { type: "tool-end" }>]),
      );
      assert.equal(ends.query_db.output, "name handler ran select 1");
      assert.equal(ends.other_db.output, "kind handler ran select 2");
      assert.deepEqual(kindCalls, [{ tool: "other_db", dsn: undefined, sql: "select 2" }]);
      assert.equal(ends.mystery.isError, true);
      assert.match(ends.mystery.output, /No handler registered for tool: mystery \(kind: teleport\)/);
    } finally {
      offKind();
      offName();
    }
    // Unregistered: nothing handles the database kind any more.
    const again = modelsByName({ dispatch: [call("other_db", { sql: "x" }), "done"] });
    const { run } = await startAgent(fixture("dispatch.prompty"), {}, undefined, { model: again.pick });
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
    assert.match(end.output, /No handler registered for tool: other_db \(kind: database\)/);
  });

  it("a runtime name handler wins over a registered one, and a registered prompty kind handler replaces the built-in", async () => {
    const offName = registerTool("get_weather", () => "registered");
    const offKind = registerToolHandler("prompty", (tool, args) => `custom prompty ${tool.name} ${JSON.stringify(args)}`);
    try {
      const { pick } = modelsByName({
        planner: [
          {
            tool_calls: [
              { id: "a", name: "get_weather", arguments: { city: "Rome" } },
              { id: "b", name: "summarize", arguments: { text: "t" } },
            ],
          },
          "ok",
        ],
      });
      const result = await invokeAgent(fixture("parent.prompty"), { destination: "Rome" }, { get_weather: () => "runtime" }, { model: pick });
      const outputs = result.messages.filter((message) => message.role === "tool").map(textOfMessage);
      assert.deepEqual(outputs, ["runtime", 'custom prompty summarize {"text":"t","audience":"kids"}']);
    } finally {
      offName();
      offKind();
    }
  });

  it("names the missing child file", async () => {
    await assert.rejects(
      invokeAgent(fixture("missing-child.prompty"), {}, undefined, { model: new ScriptedModel([]) }),
      new RegExp(`Prompty file not found: ${fixture("children/does-not-exist.prompty").replace(/[.]/g, "\\.")}`),
    );
  });

  it("refuses a prompty that calls itself (cycle) instead of recursing", async () => {
    const { pick } = modelsByName({ recursive: [call("again", { task: "more" }), "stopped"] });
    const { run } = await startAgent(fixture("self.prompty"), {}, undefined, { model: pick });
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    assert.equal((await run).text, "stopped");
    const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
    assert.equal(end.isError, true);
    assert.match(end.output, /"recursive" is already running in this delegation chain/);
  });

  it("runPrompty makes one model call and returns the text", async () => {
    const model = new ScriptedModel(["Short."]);
    assert.equal(await runPrompty(fixture("children/summarizer.prompty"), { text: "A long text." }, { model }), "Short.");
    await assert.rejects(runPrompty(fixture("children/summarizer.prompty"), {}, { model }), /Missing required input "text"/);
  });
});

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { echoTool, postJson, script, startTestServer, type TestServer, toolCall } from "./helpers.js";

const stateTypes = new Set(["run_started", "run_ended"]);

describe("POST /v1/chat/completions with the official openai client", () => {
  let test: TestServer;
  let client: OpenAI;

  before(async () => {
    test = await startTestServer({
      AGENT_NAME: "echo-agent",
      DEBUG_MOCK_RESPONSES: script(toolCall("echo", { text: "hello" }), "The echo returned: hello"),
    });
    client = new OpenAI({ baseURL: `${test.url}/v1`, apiKey: "unused", maxRetries: 0 });
  });
  after(() => test.close());

  it("streams the progress block, then the answer, and logs the seed's events in order", async () => {
    // session_id is the KAOS extension of the request body (a variable skips the excess-property check).
    const params = { model: "echo-agent", messages: [{ role: "user" as const, content: "Say hello through the echo tool" }], stream: true as const, session_id: "seed-scenario" };
    const stream = await client.chat.completions.create(params);
    const contents: string[] = [];
    const finishReasons: Array<string | null> = [];
    for await (const chunk of stream) {
      assert.equal(chunk.object, "chat.completion.chunk");
      const choice = chunk.choices[0];
      if (choice.delta.content) contents.push(choice.delta.content);
      finishReasons.push(choice.finish_reason);
    }
    assert.deepEqual(JSON.parse(contents[0]), { type: "progress", step: 1, max_steps: 5, action: "tool_call", target: "echo" });
    assert.equal(contents.slice(1).join(""), "The echo returned: hello");
    assert.ok(contents.length > 2, "the answer arrives in several deltas");
    assert.equal(finishReasons.at(-1), "stop");

    const response = await fetch(`${test.url}/memory/events?session_id=seed-scenario`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { agent: string; events: Array<Record<string, unknown>>; total: number };
    assert.equal(body.agent, "echo-agent");
    const types = body.events.map((event) => event.event_type).filter((type) => !stateTypes.has(type as string));
    assert.deepEqual(types, ["user_message", "tool_call", "tool_result", "agent_response"]);
    assert.deepEqual(Object.keys(body).sort(), ["agent", "events", "total"]);
    for (const event of body.events) {
      assert.deepEqual(Object.keys(event).sort(), ["content", "event_id", "event_type", "metadata", "timestamp"]);
      assert.equal((event.metadata as { session_id: string }).session_id, "seed-scenario");
      assert.ok(!Number.isNaN(Date.parse(event.timestamp as string)));
    }
    assert.equal(body.total, body.events.length);
  });

  it("puts the chunks on the wire in order: role, whole progress blocks, answer deltas, finish, [DONE]", async () => {
    const wave = { tool_calls: [{ id: "w1", name: "echo", arguments: { text: "a" } }, { id: "w2", name: "echo", arguments: { text: "b" } }] };
    const waveServer = await startTestServer({ AGENT_NAME: "wave-agent", DEBUG_MOCK_RESPONSES: script(wave, "Both echoed.") });
    try {
      const response = await postJson(`${waveServer.url}/v1/chat/completions`, { model: "m", stream: true, messages: [{ role: "user", content: "two at once" }] });
      assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
      const text = await response.text();
      assert.ok(text.endsWith("data: [DONE]\n\n"), "[DONE] is the last event");
      const data = text.split("\n\n").filter((block) => block !== "").map((block) => block.replace(/^data: /, ""));
      assert.equal(data.pop(), "[DONE]");
      const chunks = data.map((line) => JSON.parse(line) as { id: string; object: string; model: string; choices: Array<{ delta: { role?: string; content?: string }; finish_reason: string | null }> });
      for (const chunk of chunks) {
        assert.equal(chunk.object, "chat.completion.chunk");
        assert.equal(chunk.id, chunks[0].id);
        assert.equal(chunk.model, "m");
      }
      assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "" });
      // Each progress block is one whole content chunk.
      assert.deepEqual(chunks[1].choices[0].delta, { content: JSON.stringify({ type: "progress", step: 1, max_steps: 5, action: "tool_call", target: "echo" }) });
      assert.equal(JSON.parse(chunks[2].choices[0].delta.content!).type, "progress");
      const finish = chunks.at(-1)!;
      assert.deepEqual(finish.choices[0], { index: 0, delta: {}, finish_reason: "stop" });
      const answer = chunks.slice(3, -1);
      assert.ok(answer.length > 1, "the answer is streamed in several deltas");
      assert.ok(answer.every((chunk) => chunk.choices[0].finish_reason === null));
      assert.equal(answer.map((chunk) => chunk.choices[0].delta.content).join(""), "Both echoed.");
    } finally {
      await waveServer.close();
    }
  });

  it("answers non-streaming requests with a chat.completion and keeps the session through X-Session-ID", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: "echo-agent", messages: [{ role: "user", content: "again" }] }, { headers: { "X-Session-ID": "header-session" } })
      .withResponse();
    assert.equal(data.object, "chat.completion");
    assert.equal(data.choices[0].message.role, "assistant");
    assert.equal(data.choices[0].message.content, "The echo returned: hello");
    assert.equal(data.choices[0].finish_reason, "stop");
    assert.ok(data.usage && data.usage.total_tokens > 0);
    assert.equal(response.headers.get("x-session-id"), "header-session");
    const events = (await (await fetch(`${test.url}/memory/events?session_id=header-session`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
    assert.equal(events.events.find((event) => event.event_type === "user_message")?.content, "again");
  });

  it("gives a request without a session a new session id", async () => {
    const { response } = await client.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }] }).withResponse();
    const sessionId = response.headers.get("x-session-id");
    assert.match(sessionId ?? "", /^session_/);
    const sessions = (await (await fetch(`${test.url}/memory/sessions`)).json()) as Record<string, unknown>;
    // The KAOS shape: session ids, least recently updated first.
    assert.deepEqual(Object.keys(sessions).sort(), ["agent", "sessions", "total"]);
    assert.equal((sessions.sessions as string[]).at(-1), sessionId);
    assert.ok((sessions.sessions as string[]).includes("seed-scenario"));
    assert.equal(sessions.total, (sessions.sessions as string[]).length);
  });

  it("adds a usage chunk when stream_options.include_usage is set", async () => {
    const stream = await client.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.ok(last.usage && last.usage.total_tokens > 0 && last.usage.total_tokens === last.usage.prompt_tokens + last.usage.completion_tokens);
  });

  it("answers a field it would not honour with a 400 naming it (n > 1, sampling settings, unknown fields), streamed or not", async () => {
    const messages = [{ role: "user" as const, content: "hi" }];
    for (const [extra, param, pattern] of [
      [{ n: 2 }, "n", /n must be 1, got 2/],
      [{ n: 3, stream: true }, "n", /n must be 1/],
      [{ temperature: 0.2 }, "temperature", /temperature is not supported/],
      [{ max_tokens: 10 }, "max_tokens", /max_tokens is not supported/],
      [{ seed: 7, stream: true }, "seed", /seed is not supported/],
      [{ logprobs: true }, "logprobs", /logprobs must be false/],
      [{ frobnicate: "yes" }, "frobnicate", /frobnicate is not supported/],
    ] as const) {
      const error = await client.chat.completions.create({ model: "x", messages, ...extra } as never).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.BadRequestError, `${JSON.stringify(extra)}: ${String(error)}`);
      assert.equal(error.param, param);
      assert.equal(error.code, "unsupported_parameter");
      assert.match(error.message, pattern);
    }
  });

  it("accepts the fields it ignores harmlessly (user, metadata, store...), n: 1, and null for any field", async () => {
    const answer = await client.chat.completions.create({
      model: "x",
      messages: [{ role: "user", content: "hi" }],
      user: "user-42",
      metadata: { team: "a" },
      store: false,
      safety_identifier: "s",
      prompt_cache_key: "k",
      n: 1,
      logprobs: false,
      temperature: null,
      stream_options: null,
    });
    assert.equal(answer.choices.length, 1);
    assert.equal(answer.choices[0].message.content, "The echo returned: hello");
  });

  it("lists the agent as a model", async () => {
    const models = await client.models.list();
    assert.deepEqual(
      models.data.map((model) => model.id),
      ["echo-agent"],
    );
    const body = (await (await fetch(`${test.url}/v1/models`)).json()) as { object: string; data: Array<{ object: string; owned_by: string; created: number }> };
    assert.deepEqual([body.object, body.data[0].object, body.data[0].owned_by], ["list", "model", "agentloop"]);
    assert.ok(Math.abs(body.data[0].created - Date.now() / 1000) < 60, `created is Unix seconds: ${body.data[0].created}`);
  });

  it("returns the latest events of all sessions without session_id", async () => {
    const body = (await (await fetch(`${test.url}/memory/events`)).json()) as { events: Array<{ metadata: { session_id: string } }>; total: number };
    assert.ok(body.total > 8, "events of several sessions");
    assert.ok(new Set(body.events.map((event) => event.metadata.session_id)).size >= 2);
    const limited = (await (await fetch(`${test.url}/memory/events?limit=2`)).json()) as { events: Array<{ event_type: string; metadata: { session_id: string } }> };
    // The two most recent events: the end of the last request's run.
    assert.deepEqual(
      limited.events.map((event) => event.event_type),
      ["agent_response", "run_ended"],
    );
  });
});

describe("GET /memory/events limits", () => {
  it("defaults to the latest 100 and caps limit at 1000, with and without session_id", async () => {
    const { InMemoryStore } = await import("../../src/memory/index.js");
    const store = new InMemoryStore({ maxEventsPerSession: 5000 });
    await store.append("older", [{ event_type: "user_message", content: "first of all" }]);
    await store.append(
      "big",
      Array.from({ length: 1200 }, (_, index) => ({ event_type: "tool_result", content: index })),
    );
    const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("unused") }, { memory: store });
    try {
      const read = async (query: string) => (await (await fetch(`${test.url}/memory/events${query}`)).json()) as { events: Array<{ content: unknown }>; total: number };
      const contents = (body: { events: Array<{ content: unknown }> }) => body.events.map((event) => event.content);
      const capped = await read("?limit=5000");
      assert.equal(capped.total, 1000);
      assert.deepEqual(contents(capped), Array.from({ length: 1000 }, (_, index) => index + 200), "the latest 1000, oldest first");
      assert.equal((await read("?session_id=big&limit=1001")).total, 1000);
      assert.deepEqual(contents(await read("?session_id=big")), Array.from({ length: 100 }, (_, index) => index + 1100));
      assert.deepEqual(contents(await read("?session_id=older&limit=1000")), ["first of all"]);
    } finally {
      await test.close();
      await store.close();
    }
  });
});

describe("sessions", () => {
  it("serializes concurrent requests on one session (their events never interleave)", async () => {
    const test = await startTestServer({}, { build: { model: new (await import("../../src/index.js")).ScriptedModel(["first answer"], { chunkDelayMs: 15 }) } });
    try {
      const client = new OpenAI({ baseURL: `${test.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const ask = (content: string) => {
        const params = { model: "agent", messages: [{ role: "user" as const, content }], session_id: "shared" };
        return client.chat.completions.create(params);
      };
      await Promise.all([ask("one"), ask("two"), ask("three")]);
      const events = (await (await fetch(`${test.url}/memory/events?session_id=shared`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      const types = events.events.map((event) => event.event_type).filter((type) => !stateTypes.has(type));
      // Each run's events are contiguous: no interleaving of two runs in the log.
      assert.deepEqual(types, ["user_message", "agent_response", "user_message", "agent_response", "user_message", "agent_response"]);
    } finally {
      await test.close();
    }
  });

  it("sends the session's earlier turns to the model", async () => {
    const { ScriptedModel } = await import("../../src/index.js");
    // One script through the session's runs, and `requests` shows what each run sent.
    const model = new ScriptedModel(["noted", "your name is Ada"], { continueAcrossRuns: true });
    const test = await startTestServer({}, { build: { model } });
    try {
      const send = (content: string) => fetch(`${test.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", "x-session-id": "memo" }, body: JSON.stringify({ messages: [{ role: "user", content }] }) });
      assert.equal((await send("my name is Ada")).status, 200);
      const second = (await (await send("what is my name?")).json()) as { choices: Array<{ message: { content: string } }> };
      assert.equal(second.choices[0].message.content, "your name is Ada");
      const sent = JSON.stringify(model.requests[1].messages);
      assert.match(sent, /my name is Ada/);
      assert.match(sent, /noted/);
    } finally {
      await test.close();
    }
  });

  it("sends only the last MEMORY_CONTEXT_LIMIT exchanges, calls kept with their results", async () => {
    const { ScriptedModel } = await import("../../src/index.js");
    const model = new ScriptedModel([JSON.stringify(toolCall("echo", { text: "one" }, "e1")), "answer one", "answer two", "answer three"], { continueAcrossRuns: true });
    const test = await startTestServer({ MEMORY_CONTEXT_LIMIT: "1" }, { build: { model, tools: [echoTool] } });
    try {
      for (const content of ["one", "two", "three"]) {
        assert.equal((await postJson(`${test.url}/v1/chat/completions`, { session_id: "limited", messages: [{ role: "user", content }] })).status, 200);
      }
      const text = (message: string) => [{ type: "text", text: message }];
      // Run 2 (the model's third request) gets the one exchange before it, its tool call with its result.
      assert.deepEqual(model.requests[2].messages.slice(1), [
        { role: "user", content: "one" },
        { role: "assistant", content: [{ type: "tool-call", id: "e1", name: "echo", arguments: '{"text":"one"}' }] },
        { role: "tool", toolCallId: "e1", toolName: "echo", content: "echo: one" },
        { role: "assistant", content: text("answer one") },
        { role: "user", content: "two" },
      ]);
      // Run 3 sees only the last exchange.
      assert.deepEqual(model.requests[3].messages.slice(1), [
        { role: "user", content: "two" },
        { role: "assistant", content: text("answer two") },
        { role: "user", content: "three" },
      ]);
    } finally {
      await test.close();
    }
  });

  it("records nothing with MEMORY_ENABLED=false, and still answers", async () => {
    const test = await startTestServer({ MEMORY_ENABLED: "false", DEBUG_MOCK_RESPONSES: script("stateless answer") });
    try {
      const response = await fetch(`${test.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "s", messages: [{ role: "user", content: "hi" }] }) });
      assert.equal(((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content, "stateless answer");
      assert.deepEqual(((await (await fetch(`${test.url}/memory/sessions`)).json()) as { sessions: unknown[] }).sessions, []);
      // Nothing recorded: the session has no events (200 and none, as KAOS answers an unknown session).
      const events = await fetch(`${test.url}/memory/events?session_id=s`);
      assert.equal(events.status, 200);
      assert.equal(((await events.json()) as { total: number }).total, 0);
    } finally {
      await test.close();
    }
  });

  it("accepts a task-delegation message and records task_delegation_received", async () => {
    const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("delegated work done") });
    try {
      const response = await fetch(`${test.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        // What KAOS's RemoteAgent sends: the parent's recent messages (tool calls and results
        // included), then the task.
        body: JSON.stringify({
          model: "worker",
          session_id: "delegated",
          stream: false,
          messages: [
            { role: "user", content: "context" },
            { role: "assistant", content: null, tool_calls: [{ id: "t1", type: "function", function: { name: "delegate_to_worker", arguments: '{"task":"process the data"}' } }] },
            { role: "tool", tool_call_id: "t0", content: "[Step 1/5] Tool result: 42" },
            { role: "task-delegation", content: "process the data" },
          ],
        }),
      });
      assert.equal(response.status, 200);
      const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
      assert.equal(body.choices[0].message.content, "delegated work done");
      const events = (await (await fetch(`${test.url}/memory/events?session_id=delegated`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      const received = events.events.find((event) => event.event_type === "task_delegation_received");
      assert.equal(received?.content, "process the data");
    } finally {
      await test.close();
    }
  });
});

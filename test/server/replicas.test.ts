import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import OpenAI from "openai";
import { ScriptedModel } from "../../src/index.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { postJson, startTestServer } from "./helpers.js";

after(dropSchemas);

describe("two server replicas on one PostgreSQL store", () => {
  it("continue each other's sessions: a request on one replica sees what the other recorded", async () => {
    const memoryEnv = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("replicas") };
    // One model per replica, so `requests` shows what each replica sent.
    const models = [new ScriptedModel(["noted, Ada"]), new ScriptedModel(["your name is Ada"])];
    const [first, second] = await Promise.all(
      models.map((model) => startTestServer({ AGENT_NAME: "replicated", ...memoryEnv }, { build: { model } })),
    );
    try {
      const ask = (url: string, content: string) =>
        new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 }).chat.completions.create({ model: "replicated", messages: [{ role: "user", content }] }, { headers: { "X-Session-ID": "across" } });
      assert.equal((await ask(first.url, "my name is Ada")).choices[0].message.content, "noted, Ada");
      assert.equal((await ask(second.url, "what is my name?")).choices[0].message.content, "your name is Ada");
      assert.deepEqual(models[1].requests[0].messages.slice(1), [
        { role: "user", content: "my name is Ada" },
        { role: "assistant", content: [{ type: "text", text: "noted, Ada" }] },
        { role: "user", content: "what is my name?" },
      ]);
      // Either replica serves the whole log, in order.
      for (const replica of [first, second]) {
        const body = (await (await fetch(`${replica.url}/memory/events?session_id=across`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
        assert.deepEqual(
          body.events.filter((event) => event.event_type === "user_message" || event.event_type === "agent_response").map((event) => event.content),
          ["my name is Ada", "noted, Ada", "what is my name?", "your name is Ada"],
        );
      }
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it("take turns on one session: concurrent requests on two replicas never interleave their runs", async () => {
    const memoryEnv = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("turns") };
    // Answers streamed slowly, so runs would overlap if nothing kept them apart.
    const slowAnswer = () => new ScriptedModel(["an answer that takes a while to stream"], { chunkDelayMs: 15 });
    const [first, second] = await Promise.all(
      [slowAnswer(), slowAnswer()].map((model) => startTestServer({ AGENT_NAME: "replicated", ...memoryEnv }, { build: { model } })),
    );
    try {
      const ask = (url: string, content: string) => postJson(`${url}/v1/chat/completions`, { session_id: "contended", messages: [{ role: "user", content }] });
      const responses = await Promise.all([ask(first.url, "one"), ask(second.url, "two"), ask(first.url, "three"), ask(second.url, "four")]);
      assert.deepEqual(
        responses.map((response) => response.status),
        [200, 200, 200, 200],
      );
      const body = (await (await fetch(`${first.url}/memory/events?session_id=contended`)).json()) as { events: Array<{ event_type: string }> };
      const types = body.events.map((event) => event.event_type).filter((type) => type !== "run_started" && type !== "run_ended");
      // Each run's events are contiguous: a user message is always followed by its own answer.
      assert.deepEqual(types, Array.from({ length: 4 }, () => ["user_message", "agent_response"]).flat());
      const runs = body.events.filter((event) => event.event_type === "run_started").length;
      assert.equal(runs, 4);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

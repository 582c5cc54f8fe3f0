// A model that stalls behind `agentloop serve`: the server answers a JSON chat with a 504 and an
// OpenAI-style error, ends a streamed chat with an error chunk and [DONE], and the session's queue
// is released (the next request on the same session is answered). The model is a real loopback
// OpenAI-compatible server; the limits come from MODEL_FIRST_BYTE_TIMEOUT_MS / MODEL_IDLE_TIMEOUT_MS.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";
import { type TestServer as ModelServer, type RecordedRequest, sse, startServer } from "../providers/fixture-server.js";
import { chatFrames } from "../providers/wire-scripts.js";
import { parseAgentFile, settingsFrom } from "../../src/config/settings.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

const answer = chatFrames({ text: "all good now" });

/** The model's behaviour is chosen by the user's last message: stall before the headers, mid-stream, or answer. */
function model(request: RecordedRequest, response: ServerResponse): Promise<void> | void {
  const messages = (request.body?.messages ?? []) as Array<{ role: string; content: string }>;
  const last = String(messages.filter((message) => message.role === "user").at(-1)?.content ?? "");
  if (last.includes("stall before headers")) return new Promise<void>((resolve) => response.on("close", resolve));
  if (last.includes("stall mid-stream")) {
    response.writeHead(200, { "content-type": "text/event-stream" });
    for (const frame of chatFrames({ text: "partial answer that never ends" }).slice(0, 3)) response.write(frame);
    return new Promise<void>((resolve) => response.on("close", resolve));
  }
  return sse(answer)(request, response);
}

describe("serve: a stalled model", () => {
  let upstream: ModelServer;
  let agent: TestServer;
  before(async () => {
    upstream = await startServer(model);
    agent = await startTestServer({
      MODEL_API_URL: upstream.url,
      MODEL_NAME: "stally",
      MODEL_FIRST_BYTE_TIMEOUT_MS: "300",
      MODEL_IDLE_TIMEOUT_MS: "300",
    });
  });
  after(async () => {
    await agent.close();
    await upstream.close();
  });

  const chat = (content: string, stream: boolean, session: string) =>
    postJson(`${agent.url}/v1/chat/completions`, { model: "agent", stream, messages: [{ role: "user", content }] }, { "X-Session-ID": session });

  test("JSON chat, no headers from the model: 504 with an OpenAI-style timeout error after the retries; the session is released", async () => {
    const before = upstream.requests.length;
    const started = performance.now();
    const response = await chat("please stall before headers", false, "stall-json");
    const elapsed = performance.now() - started;
    assert.equal(response.status, 504);
    const body = (await response.json()) as { error: { message: string; type: string; code: string } };
    assert.equal(body.error.code, "timeout");
    assert.equal(body.error.type, "server_error");
    assert.match(body.error.message, /no response within 300 ms \(firstByteTimeoutMs\)/);
    // The default retry policy: 3 attempts of 300 ms plus two backoffs of at most 0.5 s and 1 s.
    assert.equal(upstream.requests.length - before, 3);
    assert.ok(elapsed >= 900 && elapsed < 15_000, `answered after ${Math.round(elapsed)} ms`);

    const next = await chat("hello again", false, "stall-json");
    assert.equal(next.status, 200);
    const completion = (await next.json()) as { choices: Array<{ message: { content: string } }> };
    assert.equal(completion.choices[0].message.content, "all good now");
  });

  test("streamed chat, the model stalls mid-stream: the text so far, one error chunk, [DONE]; the session is released", async () => {
    const started = performance.now();
    const response = await chat("please stall mid-stream", true, "stall-stream");
    assert.equal(response.status, 200);
    const text = await response.text();
    const elapsed = performance.now() - started;
    const data = text
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => line.slice(6));
    assert.equal(data.at(-1), "[DONE]");
    const error = JSON.parse(data.at(-2)!) as { error?: { code: string; message: string } };
    assert.equal(error.error?.code, "timeout", data.at(-2));
    assert.match(error.error!.message, /stalled: no data for 300 ms \(idleTimeoutMs\)/);
    assert.match(text, /partial/, "the text that came before the stall was streamed");
    assert.ok(elapsed < 10_000, `ended after ${Math.round(elapsed)} ms`);

    const events = (await (await fetch(`${agent.url}/memory/events?session_id=stall-stream`)).json()) as { events: Array<{ event_type: string; content: any }> };
    const ended = events.events.find((event) => event.event_type === "run_ended");
    assert.ok(ended, "run_ended was stored");
    assert.match(JSON.stringify(ended.content), /FAILED/);

    const next = await chat("hello again", true, "stall-stream");
    assert.equal(next.status, 200);
    const nextText = await next.text();
    assert.match(nextText, /"content":"good "[\s\S]*"finish_reason":"stop"[\s\S]*data: \[DONE\]\n\n$/);
  });
});

describe("settings: model time limits", () => {
  test("the agent file's modelTimeouts, overridden by MODEL_FIRST_BYTE_TIMEOUT_MS / MODEL_IDLE_TIMEOUT_MS", () => {
    const file = parseAgentFile("modelTimeouts:\n  firstByteMs: 90000\n  idleMs: 0\n", "agent.yaml");
    assert.deepEqual(settingsFrom(file, {}).modelTimeouts, { firstByteTimeoutMs: 90_000, idleTimeoutMs: 0 });
    assert.deepEqual(settingsFrom(file, { MODEL_IDLE_TIMEOUT_MS: "45000" }).modelTimeouts, { firstByteTimeoutMs: 90_000, idleTimeoutMs: 45_000 });
    assert.deepEqual(settingsFrom({}, {}).modelTimeouts, {});
  });

  test("a bad value names the setting", () => {
    assert.throws(() => settingsFrom({}, { MODEL_IDLE_TIMEOUT_MS: "soon" }), /MODEL_IDLE_TIMEOUT_MS: must be a whole number of milliseconds \(0 turns the limit off\), got "soon"/);
    assert.throws(() => parseAgentFile("modelTimeouts:\n  firstByteMs: -1\n", "agent.yaml"), /agent\.yaml: modelTimeouts\.firstByteMs: must be a whole number/);
    assert.throws(() => parseAgentFile("modelTimeouts:\n  connectMs: 5\n", "agent.yaml"), /modelTimeouts\.connectMs: unknown setting \(known: firstByteMs, idleMs\)/);
    assert.throws(() => parseAgentFile("modelTimeouts: 5\n", "agent.yaml"), /modelTimeouts: must be a mapping/);
  });
});

// What a client sees when the model fails, by the kind of failure (src/server/http-errors.ts,
// httpErrorOfRun): the status and OpenAI error type a JSON chat gets, and the same code in the error
// event of a stream. Upstream failures are never a 500.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AgentLoopError, type ErrorKind } from "../../src/index.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

/** A model that fails every call with the error its request's text names (`kind:<kind>`). */
const failing = {
  provider: "test",
  modelId: "failing",
  async *stream(request: { messages: Array<{ role: string; content: unknown }> }) {
    const text = JSON.stringify(request.messages.at(-1)?.content);
    const kind = /kind:(\w+)/.exec(text)?.[1] as ErrorKind;
    yield { type: "error" as const, error: new AgentLoopError(kind, `the model failed with ${kind}`, { retryable: false }) };
  },
};

describe("a failed model call, by kind, as a client sees it", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "fails" }, { build: { model: failing } });
  });
  after(() => test.close());

  // An aborted model call aborts the run: its reason (the kind, then the message) is the error's message.
  const table: Array<[ErrorKind, number, string, string, string?]> = [
    ["rate_limit", 429, "rate_limit_error", "rate_limit"],
    ["context_length", 400, "invalid_request_error", "context_length_exceeded"],
    ["configuration", 503, "server_error", "configuration"],
    ["timeout", 504, "server_error", "timeout"],
    ["authentication", 502, "server_error", "authentication"],
    ["server", 502, "server_error", "server"],
    ["aborted", 503, "server_error", "aborted", "aborted: the model failed with aborted"],
  ];
  for (const [kind, status, type, code, message = `the model failed with ${kind}`] of table) {
    it(`${kind}: ${status} ${type} ${code}, JSON and streamed`, async () => {
      const messages = [{ role: "user", content: `kind:${kind}` }];
      const json = await postJson(`${test.url}/v1/chat/completions`, { messages });
      assert.equal(json.status, status);
      const { error } = (await json.json()) as { error: { message: string; type: string; code: string; param: string | null } };
      assert.deepEqual(error, { message, type, code, param: null });
      const streamed = await postJson(`${test.url}/v1/chat/completions`, { messages, stream: true });
      assert.equal(streamed.status, 200);
      const text = await streamed.text();
      assert.ok(text.includes(`data: ${JSON.stringify({ error: { message, type, param: null, code } })}\n\n`), text);
      assert.match(text, /data: \[DONE\]\n\n$/);
    });
  }
});

it("the error class a server's failures are made of names itself", async () => {
  const { HttpError } = await import("../../src/server/index.js");
  const error = new HttpError(404, "gone", "not_found_error", "gone");
  assert.equal(error.name, "HttpError");
  assert.match(String(error), /^HttpError: gone$/);
});

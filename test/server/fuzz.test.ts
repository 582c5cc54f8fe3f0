// Property-based fuzzing (fast-check): the chat request parser and the A2A endpoint get arbitrary
// input and answer a value or a clear 4xx error: never a 500, a throw of another kind, or a hang.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { parseChatRequest } from "../../src/server/chat-request.js";
import { parseJsonText } from "../../src/server/context.js";
import { HttpError } from "../../src/server/http-errors.js";
import { seeded } from "../fuzz/seed.js";
import { startTestServer, type TestServer } from "./helpers.js";

/** A value or an HttpError with a 4xx status; anything else fails the property. */
function valueOrClientError(fn: () => unknown): void {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpError, `threw ${String(error)}`);
    assert.ok(error.status >= 400 && error.status < 500, `status ${error.status}`);
    assert.ok(error.message.length > 0 && error.code, "the error names the problem");
  }
}

const role = fc.oneof(fc.constantFrom("system", "developer", "user", "assistant", "tool", "task-delegation"), fc.string());
const content = fc.oneof(
  fc.string(),
  fc.constant(null),
  fc.array(fc.oneof(fc.record({ type: fc.constant("text"), text: fc.oneof(fc.string(), fc.integer()) }), fc.record({ type: fc.string() }), fc.jsonValue()), { maxLength: 4 }),
  fc.jsonValue(),
);
const message = fc.oneof(fc.record({ role, content }, { requiredKeys: [] }), fc.jsonValue());
/** Bodies shaped like chat requests (most get past the first checks), and arbitrary JSON. */
const chatBody = fc.oneof(
  fc.record(
    {
      messages: fc.oneof(fc.array(message, { maxLength: 5 }), fc.jsonValue()),
      model: fc.oneof(fc.string(), fc.jsonValue()),
      stream: fc.oneof(fc.boolean(), fc.jsonValue()),
      session_id: fc.oneof(fc.string(), fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,20}$/), fc.jsonValue()),
      stream_options: fc.oneof(fc.record({ include_usage: fc.jsonValue() }), fc.jsonValue()),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
);

describe("fuzzing the chat request parser", () => {
  it("parseChatRequest: any JSON body and any X-Session-ID give a request or a 400", (t) => {
    fc.assert(
      fc.property(chatBody, fc.option(fc.string()), (body, header) => {
        valueOrClientError(() => parseChatRequest(body, header ?? undefined));
      }),
      seeded(t, 500),
    );
  });

  it("parseJsonText: any text (JSON, broken JSON, deep nesting) gives a value or a 400", (t) => {
    const deep = fc.integer({ min: 1, max: 200_000 }).map((depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`);
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json(), deep, fc.json().map((text) => text.slice(0, Math.floor(text.length / 2)))), (text) => {
        valueOrClientError(() => parseJsonText(text));
      }),
      seeded(t, 300),
    );
  });
});

describe("fuzzing the server: /v1/chat/completions and the A2A endpoint", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "fuzz", DEBUG_MOCK_RESPONSES: JSON.stringify(Array(1000).fill("fuzzed")) });
  });
  after(() => test.close());

  /** POSTs through the web handler; the status, with a 5 s bound on the whole answer. */
  async function post(path: string, body: string, headers: Record<string, string> = {}): Promise<number> {
    const answer = (async () => {
      const response = await test.server.fetch(new Request(`http://fuzz${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }));
      await response.text();
      return response.status;
    })();
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within 5 s to ${path} ${body.slice(0, 200)}`)), 5000);
    });
    try {
      return await Promise.race([answer, hang]);
    } finally {
      clearTimeout(timer);
    }
  }

  it("chat completions: any body answers 200 or a 4xx, never a 500 or a hang", async (t) => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(chatBody.map((body) => JSON.stringify(body) ?? ""), fc.string()), async (body) => {
        const status = await post("/v1/chat/completions", body);
        assert.ok(status === 200 || (status >= 400 && status < 500), `status ${status} for ${body.slice(0, 200)}`);
      }),
      seeded(t, 80),
    );
  });

  const part = fc.oneof(fc.record({ kind: fc.constant("text"), text: fc.string() }), fc.record({ kind: fc.string(), text: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue());
  const a2aMessage = fc.record(
    {
      kind: fc.oneof(fc.constant("message"), fc.jsonValue()),
      messageId: fc.oneof(fc.uuid(), fc.jsonValue()),
      role: fc.oneof(fc.constantFrom("user", "agent"), fc.jsonValue()),
      parts: fc.oneof(fc.array(part, { maxLength: 3 }), fc.jsonValue()),
      contextId: fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,20}$/), fc.string(), fc.jsonValue()),
      taskId: fc.oneof(fc.uuid(), fc.jsonValue()),
      metadata: fc.jsonValue(),
    },
    { requiredKeys: [] },
  );
  const a2aBody = fc.oneof(
    fc.record(
      {
        jsonrpc: fc.oneof(fc.constant("2.0"), fc.jsonValue()),
        id: fc.oneof(fc.integer(), fc.string(), fc.jsonValue()),
        method: fc.oneof(fc.constantFrom("message/send", "message/stream", "tasks/get", "tasks/cancel", "SendMessage", "GetTask"), fc.string()),
        params: fc.oneof(fc.record({ message: a2aMessage, id: fc.oneof(fc.uuid(), fc.jsonValue()), metadata: fc.jsonValue() }, { requiredKeys: [] }), fc.jsonValue()),
      },
      { requiredKeys: [] },
    ),
    fc.jsonValue(),
  );

  for (const version of [undefined, "1.0"]) {
    it(`A2A ${version ?? "0.3"}: any body answers a JSON-RPC result or error (HTTP 200 or 4xx), never a 500 or a hang`, async (t) => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(a2aBody.map((body) => JSON.stringify(body) ?? ""), fc.string()), async (body) => {
          const status = await post("/a2a", body, version ? { "a2a-version": version } : {});
          assert.ok(status === 200 || (status >= 400 && status < 500), `status ${status} for ${body.slice(0, 200)}`);
        }),
        seeded(t, 80),
      );
    });
  }

  it("after the fuzzing, no run was left going", async () => {
    assert.equal((await fetch(`${test.url}/health`)).status, 200);
    assert.equal(test.logs.filter((line) => /unexpected error/.test(line)).length, 0, test.logs.join("\n"));
  });
});

// A conversation's requests through the Chat Completions adapter's direct path (a real server on
// loopback): each request sends the whole history in the wire format, whatever the previous request
// of the conversation was (a longer history, a different tail, a trimmed middle, a tool name that
// renames an earlier call's), and a long session does not read its old messages again every turn.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Message } from "../../src/messages.js";
import { generate, type ModelRequest, type ToolDefinition } from "../../src/model/model.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { type TestServer, sse, startServer } from "./fixture-server.js";
import { chatFrames } from "./wire-scripts.js";

let server: TestServer;
before(async () => {
  server = await startServer(sse(chatFrames({ text: "ok" })));
});
after(() => server.close());

const tool = (name: string): ToolDefinition => ({ name, description: "", parameters: { type: "object" } });

/** A tool round: one assistant message calling `name`, then its result. */
function round(id: string, name: string, result: string): Message[] {
  return [
    { role: "assistant", content: [{ type: "tool-call", id, name, arguments: "{}" }] },
    { role: "tool", toolCallId: id, toolName: name, content: result },
  ];
}

/** The wire form of `round` under the provider name `wireName`. */
function wireRound(id: string, wireName: string, result: string): unknown[] {
  return [
    { role: "assistant", tool_calls: [{ id, type: "function", function: { name: wireName, arguments: "{}" } }] },
    { role: "tool", tool_call_id: id, content: result },
  ];
}

/** Sends one request; resolves with the messages the server received. */
async function send(model: ReturnType<typeof openaiChat>, messages: Message[], tools?: ToolDefinition[]): Promise<unknown[]> {
  const request: ModelRequest = { messages: [...messages], tools };
  const response = await generate(model, request);
  assert.equal(response.error, undefined, response.error?.message);
  return server.requests.at(-1)!.body.messages;
}

describe("a conversation's history on the Chat Completions direct path", () => {
  test("each request carries the whole history: a longer one, another tail, a trimmed middle", async () => {
    const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" });
    const system: Message = { role: "system", content: "Be brief." };
    const user: Message = { role: "user", content: "go" };
    const first = round("c1", "lookup", "one");
    const second = round("c2", "lookup", "two");
    const wireStart = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "go" },
    ];
    assert.deepEqual(await send(model, [system, user], [tool("lookup")]), wireStart);
    assert.deepEqual(await send(model, [system, user, ...first], [tool("lookup")]), [...wireStart, ...wireRound("c1", "lookup", "one")]);
    assert.deepEqual(await send(model, [system, user, ...first, ...second], [tool("lookup")]), [
      ...wireStart,
      ...wireRound("c1", "lookup", "one"),
      ...wireRound("c2", "lookup", "two"),
    ]);
    // Another tail after the shared part (a retry with a different last round).
    const other = round("c3", "lookup", "three");
    assert.deepEqual(await send(model, [system, user, ...first, ...other], [tool("lookup")]), [
      ...wireStart,
      ...wireRound("c1", "lookup", "one"),
      ...wireRound("c3", "lookup", "three"),
    ]);
    // The middle left out (a context budget's trim), a marker in its place.
    const marker: Message = { role: "user", content: "[earlier rounds removed]" };
    assert.deepEqual(await send(model, [system, marker, ...other], [tool("lookup")]), [
      { role: "system", content: "Be brief." },
      { role: "user", content: "[earlier rounds removed]" },
      ...wireRound("c3", "lookup", "three"),
    ]);
    // The same history again, unchanged.
    assert.deepEqual(await send(model, [system, marker, ...other], [tool("lookup")]), [
      { role: "system", content: "Be brief." },
      { role: "user", content: "[earlier rounds removed]" },
      ...wireRound("c3", "lookup", "three"),
    ]);
  });

  test("a tool that joins later renames an earlier call in the next request", async () => {
    const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" });
    const history: Message[] = [{ role: "user", content: "go" }, ...round("c1", "a.b", "one")];
    const start = { role: "user", content: "go" };
    assert.deepEqual(await send(model, history, [tool("a.b")]), [start, ...wireRound("c1", "a_b", "one")]);
    // A tool named `a_b` keeps its legal name; the history's `a.b` becomes `a_b_2`.
    const longer = [...history, ...round("c2", "a_b", "two")];
    assert.deepEqual(await send(model, longer, [tool("a.b"), tool("a_b")]), [start, ...wireRound("c1", "a_b_2", "one"), ...wireRound("c2", "a_b", "two")]);
  });

  test("two conversations on one model, request by request in turn", async () => {
    const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" });
    const a: Message[] = [{ role: "user", content: "a" }];
    const b: Message[] = [{ role: "user", content: "b" }];
    for (let turn = 0; turn < 3; turn++) {
      a.push(...round(`a${turn}`, "lookup", `a${turn}`));
      b.push(...round(`b${turn}`, "lookup", `b${turn}`));
      const sentA = await send(model, a, [tool("lookup")]);
      const sentB = await send(model, b, [tool("lookup")]);
      assert.equal(sentA.length, 2 + 2 * turn + 1);
      assert.deepEqual(sentA.at(-1), { role: "tool", tool_call_id: `a${turn}`, content: `a${turn}` });
      assert.deepEqual(sentB.at(-1), { role: "tool", tool_call_id: `b${turn}`, content: `b${turn}` });
      assert.deepEqual(sentB[0], { role: "user", content: "b" });
    }
  });

  test("a long session reads each message a fixed number of times, not once per turn", async () => {
    const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" });
    // The first round's messages count every read of their fields.
    let reads = 0;
    const counted = round("c0", "lookup", "zero").map((message) => {
      const copy: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(message)) {
        Object.defineProperty(copy, key, {
          enumerable: true,
          get: () => {
            reads++;
            return value;
          },
        });
      }
      return copy as unknown as Message;
    });
    const history: Message[] = [{ role: "user", content: "go" }, ...counted];
    await send(model, history, [tool("lookup")]);
    const afterFirst = reads;
    assert.ok(afterFirst > 0);
    for (let turn = 1; turn <= 20; turn++) {
      history.push(...round(`c${turn}`, "lookup", String(turn)));
      const sent = await send(model, history, [tool("lookup")]);
      assert.deepEqual(sent.slice(1, 3), wireRound("c0", "lookup", "zero"));
    }
    assert.equal(reads, afterFirst, `the first round's messages were read ${reads - afterFirst} more times over 20 more turns`);
  });

  test("a history item that is not a message is named in the error, first or later", async () => {
    const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" });
    const before = server.requests.length;
    for (const messages of [["hello"], [{ role: "user", content: "go" }, 42]] as unknown as Message[][]) {
      const response = await generate(model, { messages });
      assert.match(response.error?.message ?? "", /unknown message role in ("hello"|42)/);
    }
    assert.equal(server.requests.length, before, "nothing was sent");
  });
});

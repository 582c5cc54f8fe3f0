// The context budget's default measure (estimateTokens, public) and the numbers a `context-trimmed`
// event reports, exactly: written against plausible slips in src/loop/context.ts (a part not
// counted, an image or a tool name forgotten, a rounding the wrong way).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, estimateTokens, type Message, ScriptedModel } from "../../src/index.js";
import { eventsOf, ofType } from "./helpers.js";

test("estimateTokens: 4 per message, a quarter of the characters rounded up, 500 per image; a call's name and arguments, a tool result's tool name", () => {
  assert.equal(estimateTokens({ role: "user", content: "" }), 4);
  assert.equal(estimateTokens({ role: "user", content: "abcd" }), 5);
  assert.equal(estimateTokens({ role: "user", content: "abcde" }), 6, "rounded up");
  assert.equal(estimateTokens({ role: "system", content: "x".repeat(40) }), 14);
  assert.equal(
    estimateTokens({
      role: "user",
      content: [
        { type: "text", text: "abcd" },
        { type: "image", data: "AAAA", mediaType: "image/png" },
      ],
    } as Message),
    4 + 1 + 500,
  );
  // 4 + (name 6 + arguments 2 + 16) / 4
  assert.equal(estimateTokens({ role: "assistant", content: [{ type: "tool-call", id: "c", name: "lookup", arguments: "{}" }] }), 4 + 6);
  assert.equal(estimateTokens({ role: "assistant", content: [{ type: "text", text: "abcdefgh" }, { type: "reasoning", text: "abcd" }] } as Message), 4 + 3);
  // 4 + (content 4 + tool name 4) / 4
  assert.equal(estimateTokens({ role: "tool", toolCallId: "c", toolName: "look", content: "abcd" }), 6);
});

test("a trim's event: what was removed, what was kept, the measures before and after, against the budget", async () => {
  const history: Message[] = [
    { role: "user", content: "old 1" },
    { role: "assistant", content: [{ type: "text", text: "answer 1" }] },
    { role: "user", content: "old 2" },
    { role: "assistant", content: [{ type: "text", text: "answer 2" }] },
  ];
  // One unit a message: 5 messages (4 old, the input) against a budget of 2, no reserve: both old
  // exchanges go (after the first, 3 are left), and the marker makes it 2.
  const model = new ScriptedModel(["done"]);
  const run = new Agent({ model, context: { maxTokens: 2, reserveTokens: 0, useReportedUsage: false, estimator: () => 1 } }).run("now", { history });
  const events = await eventsOf(run);
  await run;
  const [trimmed] = ofType(events, "context-trimmed");
  assert.ok(trimmed);
  const { type, reason, strategy, removedMessages, removedExchanges, removedIndexes, keptMessages, tokensBefore, tokensAfter, maxTokens, turn } = trimmed;
  assert.deepEqual(
    { type, reason, strategy, removedMessages, removedExchanges, removedIndexes, keptMessages, tokensBefore, tokensAfter, maxTokens, turn },
    { type: "context-trimmed", reason: "budget", strategy: "trim", removedMessages: 4, removedExchanges: 2, removedIndexes: [0, 1, 2, 3], keptMessages: 1, tokensBefore: 5, tokensAfter: 2, maxTokens: 2, turn: 1 },
  );
  assert.deepEqual(
    model.requests[0]!.messages.map((message) => [message.role, typeof message.content === "string" ? message.content : "…"]),
    [
      ["user", "[agentloop] 4 earlier messages were left out to fit the context budget."],
      ["user", "now"],
    ],
  );
  // A budget of 3: the oldest exchange goes, the second stays (the marker is not reserved for here).
  const roomy = new ScriptedModel(["done"]);
  const second = new Agent({ model: roomy, context: { maxTokens: 3, reserveTokens: 0, useReportedUsage: false, estimator: () => 1 } }).run("now", { history });
  const secondEvents = await eventsOf(second);
  await second;
  assert.deepEqual(ofType(secondEvents, "context-trimmed")[0]?.removedIndexes, [0, 1]);
  assert.equal(roomy.requests[0]!.messages.length, 4);
});

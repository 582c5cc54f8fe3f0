// The agent server in front of a reasoning model: the reasoning never streams as the answer, and
// the usage field carries the run's cost ("unknown" for a model the price table does not know).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { fixtureLines, replay, startServer, type TestServer as ProviderServer } from "../providers/fixture-server.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

describe("agent server over a reasoning model (recorded deepseek-reasoning stream)", () => {
  let provider: ProviderServer;
  let agent: TestServer;
  const lines = fixtureLines("openai-chat", "deepseek-reasoning").map((line) => JSON.parse(line));
  const answer = lines.map((line) => line.choices[0]?.delta?.content ?? "").join("");
  const reasoning = lines.map((line) => line.choices[0]?.delta?.reasoning_content ?? "").join("");

  before(async () => {
    provider = await startServer(replay("openai-chat", "deepseek-reasoning"));
    agent = await startTestServer({ MODEL_API_URL: provider.url, MODEL_NAME: "deepseek-reasoner" });
  });
  after(async () => {
    await agent.close();
    await provider.close();
  });

  test("streams only the answer; the usage chunk has the tokens and the cost", async () => {
    const response = await postJson(`${agent.url}/v1/chat/completions`, {
      model: "agent",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "How many r's in strawberry?" }],
    });
    assert.equal(response.status, 200);
    const chunks = (await response.text())
      .split("\n\n")
      .filter((frame) => frame.startsWith("data: {"))
      .map((frame) => JSON.parse(frame.slice(6)));
    const streamed = chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? "").join("");
    assert.equal(streamed, answer);
    assert.ok(!streamed.includes(reasoning.slice(0, 30)), "no reasoning in the answer stream");
    const usage = chunks.find((chunk) => chunk.usage)?.usage;
    assert.deepEqual(usage, { prompt_tokens: 18, completion_tokens: 219, total_tokens: 237, cost: "unknown" });
  });
});

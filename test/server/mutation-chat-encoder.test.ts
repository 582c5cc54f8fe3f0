// What a streamed chat completion carries (src/server/chat-encoder.ts) beyond the plain answer: a
// sub-agent's progress blocks with the agents they went through (and none when progress blocks are
// off), no empty content chunk (an empty delta, an empty answer, a client tool's call), and the
// step limit's message said once.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { agentTool } from "../../src/agents/index.js";
import { ScriptedModel } from "../../src/index.js";
import { Agent } from "../../src/loop/agent.js";
import { echoTool, postJson, startTestServer, type TestServer } from "./helpers.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });

interface Chunk {
  choices: Array<{ delta: { content?: string | null; tool_calls?: unknown[] }; finish_reason: string | null }>;
}

/** The streamed chunks of one chat request (without `[DONE]`). */
async function chunksOf(url: string, body: Record<string, unknown>): Promise<Chunk[]> {
  const response = await postJson(`${url}/v1/chat/completions`, { stream: true, ...body });
  assert.equal(response.status, 200);
  const text = await response.text();
  assert.match(text, /data: \[DONE\]\n\n$/);
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: {"))
    .map((block) => JSON.parse(block.slice(6)) as Chunk);
}

/** The content of every chunk after the role chunk (whose content is ""). */
const contents = (chunks: Chunk[]) => chunks.slice(1).flatMap((chunk) => (typeof chunk.choices[0]?.delta.content === "string" ? [chunk.choices[0].delta.content] : []));

describe("a sub-agent's progress blocks in a chat completions stream", () => {
  let test: TestServer;
  before(async () => {
    // Each request restarts both scripts: the parent asks the researcher, which calls echo.
    const researcher = new Agent({ name: "researcher", description: "Finds things", model: new ScriptedModel([calls(["sub_1", "echo", { text: "deep" }]), "Found: deep."]), tools: [echoTool] });
    const model = new ScriptedModel([calls(["call_r", "researcher", { task: "find deep" }]), "Done."]);
    test = await startTestServer({ AGENT_NAME: "parent", MEMORY_ENABLED: "false" }, { build: { model, tools: [agentTool(researcher, { name: "researcher" })] } });
  });
  after(() => test.close());

  it("carry the agent path from this server's agent down to the sub-agent, live, before the answer", async () => {
    const blocks = contents(await chunksOf(test.url, { messages: [{ role: "user", content: "research" }] }));
    assert.equal(blocks.at(-1), "Done.");
    const progress = blocks.slice(0, -1).map((block) => JSON.parse(block) as Record<string, unknown>);
    assert.deepEqual(
      progress.map((block) => [block.target, block.agent_path ?? null]),
      [
        ["researcher", null],
        ["echo", ["parent", "researcher"]],
      ],
    );
    assert.deepEqual(progress[1], { type: "progress", step: 1, max_steps: 10, action: "tool_call", target: "echo", agent_path: ["parent", "researcher"] });
  });

  it("are left out with progress_blocks: false, the sub-agent's too", async () => {
    assert.deepEqual(contents(await chunksOf(test.url, { messages: [{ role: "user", content: "research" }], progress_blocks: false })), ["Done."]);
  });
});

describe("no empty content chunk", () => {
  let test: TestServer;
  before(async () => {
    /** Answers with an empty delta, then "Hi"; "say nothing" gets an empty answer. */
    const model = {
      provider: "test",
      modelId: "empty-deltas",
      async *stream(request: { messages: Array<{ role: string; content: unknown }> }) {
        const silent = JSON.stringify(request.messages.at(-1)?.content).includes("say nothing");
        yield { type: "response-start" as const, model: "empty-deltas" };
        yield { type: "text-start" as const, id: "t" };
        yield { type: "text-delta" as const, id: "t", delta: "" };
        if (!silent) yield { type: "text-delta" as const, id: "t", delta: "Hi" };
        yield { type: "text-end" as const, id: "t" };
        yield { type: "finish" as const, reason: { unified: "stop" as const, raw: "stop" } };
      },
    };
    test = await startTestServer({ AGENT_NAME: "quiet", MEMORY_ENABLED: "false" }, { build: { model } });
  });
  after(() => test.close());

  it("an empty delta sends nothing; an empty answer sends no content, only the role and the finish", async () => {
    assert.deepEqual(contents(await chunksOf(test.url, { messages: [{ role: "user", content: "hi" }] })), ["Hi"]);
    const silent = await chunksOf(test.url, { messages: [{ role: "user", content: "say nothing" }] });
    assert.deepEqual(
      silent.slice(1).map((chunk) => [chunk.choices[0]?.delta.content ?? null, chunk.choices[0]?.finish_reason ?? null]),
      [[null, "stop"]],
    );
  });
});

describe("the closing of a stream that did not complete", () => {
  let test: TestServer;
  before(async () => {
    const model = new ScriptedModel([JSON.stringify({ content: "Checking.", tool_calls: [{ id: "call_e", name: "echo", arguments: { text: "1" } }] }), calls(["call_f", "echo", { text: "2" }])], { continueAcrossRuns: false });
    test = await startTestServer({ AGENT_NAME: "limited", MEMORY_ENABLED: "false", AGENTIC_LOOP_MAX_STEPS: "1" }, { build: { model, tools: [echoTool] } });
  });
  after(() => test.close());

  it("a client tool's call: no content, the call and tool_calls", async () => {
    const tools = [{ type: "function", function: { name: "where", parameters: { type: "object" } } }];
    const where = new ScriptedModel([calls(["call_w", "where", {}])]);
    const server = await startTestServer({ AGENT_NAME: "geo", MEMORY_ENABLED: "false" }, { build: { model: where } });
    try {
      const chunks = await chunksOf(server.url, { session_id: "geo-stream", messages: [{ role: "user", content: "where?" }], tools, progress_blocks: false });
      assert.deepEqual(contents(chunks), [], "no content after the role chunk");
      assert.equal(chunks.at(-1)!.choices[0].finish_reason, "tool_calls");
    } finally {
      await server.close();
    }
  });

  it("the step limit: its message once, then the limit's finish", async () => {
    const chunks = await chunksOf(test.url, { messages: [{ role: "user", content: "go" }], progress_blocks: false });
    // The tool turn's commentary is no answer: only the limit's message, once.
    assert.deepEqual(contents(chunks), ["Reached maximum reasoning steps (1)"]);
    assert.equal(chunks.at(-1)!.choices[0].finish_reason, "length");
  });
});

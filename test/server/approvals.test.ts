import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import OpenAI from "openai";
import { ScriptedModel } from "../../src/index.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { echoTool, postJson, recordingTools, startTestServer, writeFileTool } from "./helpers.js";

after(dropSchemas);

const written: string[] = [];
const writeFile = writeFileTool(written);
const script = [
  JSON.stringify({ tool_calls: [{ id: "call_a", name: "write_file", arguments: { path: "a.txt" } }, { id: "call_b", name: "write_file", arguments: { path: "b.txt" } }] }),
  "I wrote a.txt and skipped b.txt.",
];

/** The `data:` payloads of an SSE body. */
function sseData(text: string): string[] {
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => block.slice("data: ".length));
}

interface ApprovalRequired {
  session_id: string;
  checkpoint_id: string;
  pending: Array<{ tool_call_id: string; tool: string; arguments: Record<string, unknown>; arguments_hash: string; agent_path: string[] }>;
}

describe("approvals through the server", () => {
  it("a streamed chat (official openai client) stops with approval_required; POST /v1/approvals on a second replica sharing PostgreSQL streams the rest", async () => {
    written.length = 0;
    const memoryEnv = { AGENT_NAME: "writer", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("approvals") };
    const [first, second] = await Promise.all([0, 1].map(() => startTestServer(memoryEnv, { build: { model: new ScriptedModel(script), tools: [writeFile] } })));
    try {
      const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const stream = await client.chat.completions.create(
        { model: "writer", stream: true, messages: [{ role: "user", content: "write a.txt and b.txt" }] },
        { headers: { "X-Session-ID": "needs-ok" } },
      );
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      const last = chunks.at(-1)!;
      assert.equal(last.choices[0]?.finish_reason as string, "approval_required");
      const approvals = (last as unknown as { approval_required: ApprovalRequired }).approval_required;
      assert.equal(approvals.session_id, "needs-ok");
      assert.deepEqual(
        approvals.pending.map((entry) => [entry.tool_call_id, entry.tool, entry.arguments, entry.agent_path]),
        [
          ["call_a", "write_file", { path: "a.txt" }, ["writer"]],
          ["call_b", "write_file", { path: "b.txt" }, ["writer"]],
        ],
      );
      assert.deepEqual(written, [], "nothing ran before the decisions");

      // Nothing pending elsewhere, and bad decisions, are refused as plain JSON errors.
      const none = await postJson(`${second.url}/v1/approvals`, { session_id: "nobody", decisions: { x: { approve: true } } });
      assert.equal(none.status, 404);
      assert.equal(((await none.json()) as { error: { code: string } }).error.code, "no_pending_approval");
      const wrongHash = await postJson(`${second.url}/v1/approvals`, { session_id: "needs-ok", decisions: { call_a: { approve: true, arguments_hash: "f".repeat(32) } } });
      assert.equal(wrongHash.status, 400);
      assert.match(((await wrongHash.json()) as { error: { message: string } }).error.message, /made for other arguments/);
      const malformed = await postJson(`${second.url}/v1/approvals`, { session_id: "needs-ok", decisions: { call_a: "yes" } });
      assert.equal(malformed.status, 400);

      const decisions = {
        call_a: { approve: true, arguments_hash: approvals.pending[0]!.arguments_hash },
        call_b: { approve: false, reason: "b.txt is read-only" },
      };
      const resumed = await postJson(`${second.url}/v1/approvals`, { session_id: "needs-ok", decisions });
      assert.equal(resumed.status, 200);
      assert.match(resumed.headers.get("content-type") ?? "", /text\/event-stream/);
      const data = sseData(await resumed.text());
      assert.equal(data.at(-1), "[DONE]");
      const parsed = data.slice(0, -1).map((line) => JSON.parse(line) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }> });
      const content = parsed.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("");
      assert.match(content, /"type":"progress","step":1/);
      assert.match(content, /I wrote a\.txt and skipped b\.txt\.$/);
      assert.equal(parsed.at(-1)!.choices[0]!.finish_reason, "stop");
      assert.deepEqual(written, ["a.txt"], "the approved call ran once, on the second replica");

      const again = await postJson(`${first.url}/v1/approvals`, { session_id: "needs-ok", decisions });
      assert.equal(again.status, 409);
      assert.equal(((await again.json()) as { error: { code: string } }).error.code, "approval_already_decided");
      assert.deepEqual(written, ["a.txt"]);

      // The session's log tells the story, on either replica.
      const events = (await (await fetch(`${first.url}/memory/events?session_id=needs-ok`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      const types = events.events.map((event) => event.event_type);
      assert.ok(types.includes("approval_requested") && types.includes("approval_decided"), types.join(", "));
      const results = events.events.filter((event) => event.event_type === "tool_result").map((event) => (event.content as { result: string }).result);
      assert.deepEqual(results, ["wrote a.txt", "Rejected: b.txt is read-only"]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it("without memory, and not streamed: the completion names the pending calls; the same server resumes it", async () => {
    written.length = 0;
    const server = await startTestServer({ AGENT_NAME: "writer", MEMORY_ENABLED: "false" }, { build: { model: new ScriptedModel(script), tools: [writeFile] } });
    try {
      const response = await postJson(`${server.url}/v1/chat/completions`, { session_id: "local", messages: [{ role: "user", content: "write" }] });
      const body = (await response.json()) as { choices: Array<{ finish_reason: string }>; approval_required: ApprovalRequired };
      assert.equal(body.choices[0]!.finish_reason, "approval_required");
      assert.equal(body.approval_required.pending.length, 2);
      const resumed = await postJson(`${server.url}/v1/approvals`, {
        session_id: "local",
        stream: false,
        decisions: { call_a: { approve: true }, call_b: { approve: true } },
      });
      const completion = (await resumed.json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
      assert.equal(completion.choices[0]!.finish_reason, "stop");
      assert.equal(completion.choices[0]!.message.content, "I wrote a.txt and skipped b.txt.");
      assert.deepEqual(written, ["a.txt", "b.txt"]);
      const again = await postJson(`${server.url}/v1/approvals`, { session_id: "local", decisions: { call_a: { approve: true } } });
      assert.equal(again.status, 404);
    } finally {
      await server.close();
    }
  });
});

describe("guardrails through the server", () => {
  it("an output guardrail's deny never reaches the client: finish_reason content_filter, the reason as content; deniedTools from the agent file", async () => {
    const model = new ScriptedModel([
      JSON.stringify({ tool_calls: [{ id: "s1", name: "echo", arguments: { text: "rm -rf" } }] }),
      "the launch code is 0000",
    ]);
    const server = await startTestServer(
      { AGENT_NAME: "guarded" },
      {
        file: { guardrails: { deniedTools: [{ tools: "ech?", reason: "echo is off today" }] } },
        build: { model, tools: [echoTool], guardrails: { output: ({ text }) => (text.includes("code") ? { allow: false, reason: "secrets stay in" } : { allow: true }) } },
      },
    );
    try {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: "guarded", stream: true, messages: [{ role: "user", content: "tell me" }] }, { headers: { "X-Session-ID": "g1" } });
      let content = "";
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        content += chunk.choices[0]?.delta.content ?? "";
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(finish, "content_filter");
      assert.doesNotMatch(content, /0000/);
      assert.match(content, /output guardrail: secrets stay in$/);
      const events = (await (await fetch(`${server.url}/memory/events?session_id=g1`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      const results = events.events.filter((event) => event.event_type === "tool_result").map((event) => (event.content as { result: string }).result);
      assert.deepEqual(results, ["Tool denied by guardrail: echo is off today"]);
      assert.ok(!JSON.stringify(events).includes("0000"), "the denied answer is not in the session's log");
    } finally {
      await server.close();
    }
  });
});

describe("guardrails across POST /v1/approvals", () => {
  it("every call of the resumed wave passes the resuming replica's guardrails (code and agent file): a denied call never runs, approved or not", async () => {
    const ran: string[] = [];
    const tool = recordingTools(ran);
    const tools = [tool("pay", true), tool("refund", true), tool("wipe"), tool("purge"), tool("look")];
    const wave = ["pay", "refund", "wipe", "purge", "look"].map((name) => ({ id: `c_${name}`, name, arguments: {} }));
    const denied = new Set(["wipe"]);
    const build = (model: ScriptedModel) => ({
      file: { guardrails: { deniedTools: [{ tools: "pur*", reason: "purging is off" }] } },
      build: { model, tools, guardrails: { tool: ({ toolName }: { toolName: string }) => (denied.has(toolName) ? { allow: false as const, reason: `${toolName} is denied` } : { allow: true as const }) } },
    });
    const env = { AGENT_NAME: "shop", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("guarded_approvals") };
    const script = [JSON.stringify({ tool_calls: wave }), "Settled."];
    const [first, second] = await Promise.all([0, 1].map(() => startTestServer(env, build(new ScriptedModel(script)))));
    try {
      const response = await postJson(`${first.url}/v1/chat/completions`, { session_id: "shop-1", stream: false, messages: [{ role: "user", content: "settle" }] });
      const body = (await response.json()) as { choices: Array<{ finish_reason: string }>; approval_required: ApprovalRequired };
      assert.equal(body.choices[0]!.finish_reason, "approval_required");
      assert.deepEqual(
        body.approval_required.pending.map((entry) => entry.tool_call_id),
        ["c_pay", "c_refund"],
      );
      assert.deepEqual(ran, []);
      denied.add("refund"); // the policy changed while the approvals waited
      const resumed = await postJson(`${second.url}/v1/approvals`, { session_id: "shop-1", decisions: { c_pay: { approve: true }, c_refund: { approve: true } } });
      assert.equal(resumed.status, 200);
      const data = sseData(await resumed.text());
      assert.equal(data.at(-1), "[DONE]");
      assert.deepEqual(ran, ["pay", "look"]);
      const events = (await (await fetch(`${second.url}/memory/events?session_id=shop-1`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
      const results = events.events.filter((event) => event.event_type === "tool_result").map((event) => (event.content as { result: string }).result);
      assert.deepEqual(results, ["pay done", "Tool denied by guardrail: refund is denied", "Tool denied by guardrail: wipe is denied", "Tool denied by guardrail: purging is off", "look done"]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

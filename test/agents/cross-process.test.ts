// Two `agentloop serve` processes, coordinator and worker, over A2A and over KAOS delegation: the
// coordinator's client sees the worker's tool calls live; a tool needing approval inside the
// worker ends the coordinator's chat with approval_required naming the worker's call; POST
// /v1/approvals on the coordinator runs it exactly once (a real MCP server counts it in a file) and
// the answer flows back up; a rejection comes back as the worker's tool result.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type CliProcess, cleanEnv, readyUrl, repositoryRoot, spawnCli } from "../cli/helpers.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-cross-"));
const notes = join(root, "notes.txt");
const processes: CliProcess[] = [];
after(async () => {
  for (const cli of processes) cli.child.kill("SIGKILL");
  await Promise.all(processes.map((cli) => cli.exited));
  rmSync(root, { recursive: true, force: true });
});

const serve = (env: NodeJS.ProcessEnv, args: string[] = []) => {
  const cli = spawnCli(["serve", "--port", "0", "--host", "127.0.0.1", "--json", ...args], cleanEnv({ MEMORY_TYPE: "memory", ...env }));
  processes.push(cli);
  return cli;
};
const writes = () => (existsSync(notes) ? readFileSync(notes, "utf8").split("\n").filter(Boolean).length : 0);

/** The `data:` payloads of an SSE body, parsed (without `[DONE]`). */
async function chunksOf(response: Response): Promise<Array<Record<string, any>>> {
  assert.equal(response.status, 200, await response.clone().text());
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: {"))
    .map((block) => JSON.parse(block.slice(6)));
}
const progressBlocks = (chunks: Array<Record<string, any>>) =>
  chunks.flatMap((chunk) => {
    const content = chunk.choices?.[0]?.delta?.content;
    return typeof content === "string" && content.startsWith('{"type":"progress"') ? [JSON.parse(content)] : [];
  });
const answerOf = (chunks: Array<Record<string, any>>) =>
  chunks
    .map((chunk) => chunk.choices?.[0]?.delta?.content ?? "")
    .filter((content: string) => !content.startsWith('{"type":"progress"'))
    .join("");
const post = (url: string, body: unknown) => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("approvals and streams across two agentloop serve processes", () => {
  let workerUrl: string;
  const coordinators: Record<string, string> = {};
  before(async () => {
    const workerFile = join(root, "worker.yaml");
    writeFileSync(
      workerFile,
      `name: worker
mcpServers:
  - name: notes
    command: node
    args: ["${join(repositoryRoot, "test/agents/fixtures/notes-server.mjs")}", "${notes}"]
approvals:
  tools: ["write_note"]
`,
    );
    const worker = serve(
      {
        DEBUG_MOCK_RESPONSES: JSON.stringify([
          JSON.stringify({ tool_calls: [{ id: "w_read", name: "read_notes", arguments: {} }] }),
          JSON.stringify({ tool_calls: [{ id: "w_write", name: "write_note", arguments: { text: "hello" } }] }),
          "The worker finished.",
        ]),
      },
      ["--agent", workerFile],
    );
    workerUrl = await readyUrl(worker);
    const script = JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c_call", name: "delegate_to_worker", arguments: { task: "write hello" } }] }), "The coordinator relayed it."]);
    const a2aFile = join(root, "coordinator-a2a.yaml");
    writeFileSync(a2aFile, `name: coordinator\nsubAgents:\n  - name: worker\n    url: ${workerUrl}\n    protocol: a2a\n`);
    const [a2a, kaos] = [serve({ DEBUG_MOCK_RESPONSES: script }, ["--agent", a2aFile]), serve({ AGENT_NAME: "coordinator", DEBUG_MOCK_RESPONSES: script, AGENT_SUB_AGENTS: `worker:${workerUrl}` })];
    [coordinators.A2A, coordinators.KAOS] = await Promise.all([readyUrl(a2a), readyUrl(kaos)]);
  });

  for (const protocol of ["A2A", "KAOS"]) {
    it(`over ${protocol}: live tool calls, approval_required naming the worker's call, the approval runs it once and the answer flows back`, async () => {
      const url = coordinators[protocol]!;
      const session = `approve-${protocol}`;
      const before = writes();
      const asked = await chunksOf(await post(`${url}/v1/chat/completions`, { session_id: session, stream: true, messages: [{ role: "user", content: "write hello" }] }));
      // The worker's first tool call reached the coordinator's client while the chat went on.
      assert.deepEqual(
        progressBlocks(asked).map((block) => [block.target, block.agent_path]),
        [
          ["worker", undefined],
          ["read_notes", ["coordinator", "worker"]],
        ],
      );
      const last = asked.at(-1)!;
      assert.equal(last.choices[0].finish_reason, "approval_required");
      assert.deepEqual(
        last.approval_required.pending.map((entry: Record<string, unknown>) => [entry.tool_call_id, entry.tool, entry.arguments, entry.agent_path]),
        [["w_write", "write_note", { text: "hello" }, ["coordinator", "worker"]]],
      );
      assert.equal(writes(), before, "nothing written before the decision");

      const resumed = await chunksOf(await post(`${url}/v1/approvals`, { session_id: session, decisions: { w_write: { approve: true } } }));
      assert.deepEqual(
        progressBlocks(resumed).map((block) => [block.target, block.agent_path]),
        [
          ["worker", undefined],
          ["write_note", ["coordinator", "worker"]],
        ],
      );
      assert.equal(answerOf(resumed), "The coordinator relayed it.");
      assert.equal(resumed.at(-1)!.choices[0].finish_reason, "stop");
      assert.equal(writes(), before + 1, "the worker's tool ran exactly once");
      const events = (await (await fetch(`${url}/memory/events?session_id=${session}`)).json()) as { events: Array<{ event_type: string; content: any }> };
      const responses = events.events.filter((event) => event.event_type === "delegation_response").map((event) => event.content);
      assert.deepEqual(responses, [{ agent: "worker", response: "The worker finished." }], "the worker's answer is the delegation's result");
      const again = await post(`${url}/v1/approvals`, { session_id: session, decisions: { w_write: { approve: true } } });
      assert.ok(again.status === 404 || again.status === 409, String(again.status));
      assert.equal(writes(), before + 1);
    });

    it(`over ${protocol}: a rejection comes back as the worker's tool result`, async () => {
      const url = coordinators[protocol]!;
      const session = `reject-${protocol}`;
      const before = writes();
      const asked = await chunksOf(await post(`${url}/v1/chat/completions`, { session_id: session, stream: true, messages: [{ role: "user", content: "write hello" }] }));
      assert.equal(asked.at(-1)!.choices[0].finish_reason, "approval_required");
      const resumed = await chunksOf(await post(`${url}/v1/approvals`, { session_id: session, decisions: { w_write: { approve: false, reason: `no notes over ${protocol}` } } }));
      assert.equal(answerOf(resumed), "The coordinator relayed it.");
      assert.equal(writes(), before);
      const events = (await (await fetch(`${workerUrl}/memory/events?limit=1000`)).json()) as { events: Array<{ event_type: string; content: any }> };
      const rejected = events.events.filter((event) => event.event_type === "tool_result" && event.content.result === `Rejected: no notes over ${protocol}`);
      assert.equal(rejected.length, 1, "the worker's write_note got the rejection as its result");
    });
  }
});

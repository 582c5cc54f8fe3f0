// One rule for a run that uses up its steps, in every tool-call mode: the answer is KAOS's
// `Reached maximum reasoning steps (N)` (seed 000; KAOS's current runtime in every mode), the state
// says a limit ended it (TURN_LIMIT, `run` exits 3), and `serve` sends the text as the content with
// `finish_reason: "length"`. Before, native and fenced `serve` answered `maxTurns (3) reached`.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cleanEnv, postChat, readyUrl, runCli, spawnCli } from "./helpers.js";

const scripts: Record<string, string> = {
  native: JSON.stringify({ tool_calls: [{ name: "lookup", arguments: {} }] }),
  string: JSON.stringify({ tool_calls: [{ name: "lookup", arguments: {} }] }),
  action: JSON.stringify({ tool: "lookup", arguments: {} }),
  fenced: '```tool_call\n{"tool": "lookup", "arguments": {}}\n```',
};
const script = (mode: string) => JSON.stringify(Array(12).fill(scripts[mode]));

describe("the step limit, in every mode", { concurrency: 4 }, () => {
  for (const mode of ["native", "fenced", "action"]) {
    it(`serve (${mode}, AGENTIC_LOOP_MAX_STEPS=3): the content is "Reached maximum reasoning steps (3)", finish_reason "length", streamed or not`, async () => {
      const env = cleanEnv({ MEMORY_TYPE: "memory", TOOL_CALL_MODE: mode, AGENTIC_LOOP_MAX_STEPS: "3", DEBUG_MOCK_RESPONSES: script(mode) });
      const server = spawnCli(["serve", "--port", "0", "--host", "127.0.0.1", "--json"], env);
      try {
        const url = await readyUrl(server);
        const body = (await (await postChat(url, "look it up")).json()) as { choices: Array<{ message: { content: string }; finish_reason: string }> };
        assert.deepEqual(body.choices[0], { index: 0, message: { role: "assistant", content: "Reached maximum reasoning steps (3)" }, finish_reason: "length" });
        const streamed = await (await postChat(url, "again", { stream: true })).text();
        const chunks = streamed
          .split("\n\n")
          .filter((block) => block.startsWith("data: {"))
          .map((block) => JSON.parse(block.slice(6)) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }> });
        const content = chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").filter((text) => !text.startsWith("{"));
        assert.equal(content.join(""), "Reached maximum reasoning steps (3)");
        assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, "length");
      } finally {
        server.child.kill("SIGTERM");
        await server.exited;
      }
    });
  }

  it("run --tool-call-mode string|fenced --max-steps 2: TURN_LIMIT, exit 3", async () => {
    const results = await Promise.all(["string", "fenced"].map((mode) => runCli(["run", "look it up", "--tool-call-mode", mode, "--max-steps", "2", "--mock", script(mode)], cleanEnv({ MEMORY_TYPE: "memory" }))));
    const [string, fenced] = results;
    assert.equal(string!.code, 3, string!.stderr);
    assert.match(string!.stderr, /agentloop: run ended TURN_LIMIT: maxTurns \(2\) reached/);
    assert.equal(fenced!.code, 3, fenced!.stderr);
    assert.match(fenced!.stdout, /Reached maximum reasoning steps \(2\)\n$/);
    assert.match(fenced!.stderr, /agentloop: run ended TURN_LIMIT: Reached maximum reasoning steps \(2\)\n$/);
  });
});

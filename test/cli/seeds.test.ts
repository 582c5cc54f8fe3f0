// The seeds' behaviours from the command line (seed 000: the action protocol, its mock scripts and
// its step limit; seed 001: waves counted per input), each through a real `agentloop` child process.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { everythingServerPath } from "../mcp/helpers.js";
import { cleanEnv, runCli } from "./helpers.js";

/** The everything reference MCP server (its `echo` tool answers `Echo: <message>`) as an --mcp command line. */
const everything = `${process.execPath} ${everythingServerPath} stdio`;
const echoAction = (message: string) => JSON.stringify({ tool: "echo", arguments: { message } });
/** A plan of the seed's plan-next-wave protocol: four identical echo calls in one wave. */
const echoPlan = JSON.stringify({
  status: "continue",
  action: "echoing",
  tools: ["a", "b", "c", "d"].map((id) => ({ id, tool: "echo", args: { message: "again" } })),
  reasoning: "keep echoing",
});

let directory: string;
before(async () => {
  directory = await mkdtemp(join(tmpdir(), "agentloop-seeds-"));
});
after(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** The last non-empty line of the rendered output: the answer. */
const answerOf = (stdout: string) => stdout.trimEnd().split("\n").at(-1);

describe("seed 000 from the CLI: the scripted model stands in for the provider, under the tool-call mode", { concurrency: 2 }, () => {
  it("DEBUG_MOCK_RESPONSES + TOOL_CALL_MODE=action: the seed's script calls the tool, `{}`, then the final answer", async () => {
    const script = JSON.stringify([echoAction("hello"), "{}", "The echo returned: hello"]);
    const result = await runCli(["run", "say hello", "--mcp", everything], cleanEnv({ DEBUG_MOCK_RESPONSES: script, TOOL_CALL_MODE: "action", NO_COLOR: "1" }));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /● wave 1\n {2}… running echo \{"message":"hello"\}\n {2}✓ echo [\d.]+ m?s {2}Echo: hello/);
    assert.equal(answerOf(result.stdout), "The echo returned: hello");
    assert.doesNotMatch(result.stdout, /"tool"/, "the action script is not printed as the answer");
    assert.match(result.stderr, /COMPLETED · 2 model calls · 1 wave · 1 tool call · \d+ tokens/);
  });

  it("--tool-call-mode action --max-steps 3 --mock @file: three steps, then exactly `Reached maximum reasoning steps (3)`, TURN_LIMIT, exit 3", async () => {
    const file = join(directory, "actions.json");
    await writeFile(file, JSON.stringify(Array.from({ length: 30 }, () => echoAction("hi"))));
    const result = await runCli(["run", "echo forever", "--tool-call-mode", "action", "--max-steps", "3", "--mcp", everything, "--mock", `@${file}`], cleanEnv({ NO_COLOR: "1" }));
    assert.equal(result.code, 3, result.stderr);
    assert.equal(result.stdout.match(/✓ echo /g)?.length, 3);
    assert.equal(answerOf(result.stdout), "Reached maximum reasoning steps (3)");
    assert.match(result.stderr, /^agentloop: run ended TURN_LIMIT: Reached maximum reasoning steps \(3\)\n$/);
    const json = await runCli(["run", "echo forever", "--json", "--tool-call-mode", "action", "--max-steps", "3", "--mcp", everything, "--mock", `@${file}`], cleanEnv({ NO_COLOR: "1" }));
    const end = JSON.parse(json.stdout.trim().split("\n").at(-1)!) as { type: string; state: string };
    assert.deepEqual([end.type, end.state], ["run-end", "TURN_LIMIT"]);
  });

  it("AGENTIC_LOOP_MAX_STEPS reaches the action protocol too", async () => {
    const script = JSON.stringify(Array.from({ length: 10 }, () => echoAction("hi")));
    const result = await runCli(["run", "echo forever", "--mock", script], cleanEnv({ TOOL_CALL_MODE: "action", AGENTIC_LOOP_MAX_STEPS: "2", NO_COLOR: "1" }));
    assert.equal(result.code, 3, result.stderr);
    // No tools here: each action is a call to an unknown tool, an error result the model sees.
    assert.equal(result.stdout.match(/✗ echo /g)?.length, 2);
    assert.equal(answerOf(result.stdout), "Reached maximum reasoning steps (2)");
  });

  it('a delegation action {"agent": …} goes to the peer agent, then `{}` and the final answer', async () => {
    const tasks: string[] = [];
    const peer: Server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
      response.setHeader("content-type", "application/json");
      if (request.url?.startsWith("/.well-known/")) {
        response.end(JSON.stringify({ name: "researcher", description: "Finds facts", url: "http://x", version: "1" }));
        return;
      }
      let body = "";
      for await (const chunk of request) body += chunk;
      tasks.push(JSON.stringify(JSON.parse(body).messages));
      response.end(JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: "Qubits can be 0 and 1 at once." }, finish_reason: "stop" }] }));
    });
    await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
      const script = JSON.stringify([
        JSON.stringify({ agent: "researcher", task: "Find quantum info" }),
        "{}",
        "Based on the research, quantum computing uses qubits.",
      ]);
      const result = await runCli(["run", "explain quantum computing", "--tool-call-mode", "action", "--mock", script], cleanEnv({ AGENT_SUB_AGENTS: `researcher:${url}`, NO_COLOR: "1" }));
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /✓ delegate_to_researcher [\d.]+ m?s {2}Qubits can be 0 and 1 at once\./);
      assert.equal(answerOf(result.stdout), "Based on the research, quantum computing uses qubits.");
      assert.equal(tasks.length, 1);
      assert.match(tasks[0], /Find quantum info/);
    } finally {
      peer.closeAllConnections();
      await new Promise((resolve) => peer.close(resolve));
    }
  });
});

describe("waves are counted per input", { concurrency: 2 }, () => {
  it("plan mode: loop-detection warnings do not reset the wave count (--max-steps 4 → 4 waves, then the answer, TURN_LIMIT)", async () => {
    // Eight identical plans of four identical calls: the loop detector warns after the third wave.
    const script = JSON.stringify([...Array.from({ length: 8 }, () => echoPlan), "Done echoing."]);
    const result = await runCli(["run", "echo", "--tool-call-mode", "plan", "--max-steps", "4", "--mcp", everything, "--mock", script], cleanEnv({ NO_COLOR: "1" }));
    assert.equal(result.code, 3, result.stderr);
    assert.match(result.stdout, /⚠ loop detected: echo/);
    assert.match(result.stdout, /● wave 4\n/);
    assert.doesNotMatch(result.stdout, /● wave 5/);
    assert.match(result.stderr, /agentloop: run ended TURN_LIMIT: the tool-call protocol's steps ran out; final answer given without tools/);
  });
});

describe("--mock input", { concurrency: 2 }, () => {
  it("text that starts with [ or { but is not JSON exits 2 naming the parse error and its position", async () => {
    const result = await runCli(["run", "hi", "--mock", '["Hello", "again",]'], cleanEnv());
    assert.equal(result.code, 2);
    assert.equal(result.stdout, "");
    assert.match(result.stderr, /^agentloop: --mock: not valid JSON at position 18 \(line 1, column 19\): Unexpected token '\]'\n$/);
  });

  it("DEBUG_MOCK_RESPONSES is checked the same way, and a missing @file is named", async () => {
    const broken = await runCli(["run", "hi"], cleanEnv({ DEBUG_MOCK_RESPONSES: '{"tool": "echo"' }));
    assert.equal(broken.code, 2);
    assert.match(broken.stderr, /agentloop: DEBUG_MOCK_RESPONSES: not valid JSON at position 15 \(line 1, column 16\)/);
    const missing = await runCli(["run", "hi", "--mock", `@${join(directory, "nope.json")}`], cleanEnv());
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /agentloop: --mock: cannot read .*nope\.json \(ENOENT\)/);
  });
});

describe("flags over the environment", { concurrency: 2 }, () => {
  it("--mock wins over DEBUG_MOCK_RESPONSES", async () => {
    const result = await runCli(["run", "hi", "--mock", '["from the flag"]'], cleanEnv({ DEBUG_MOCK_RESPONSES: '["from the environment"]', NO_COLOR: "1" }));
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, "from the flag\n");
  });
});

describe("agentloop run has one personality", { concurrency: 2 }, () => {
  it("without a model it says in one line how to configure one and exits 2 (no canned hotel answer)", async () => {
    const result = await runCli(["run", "What's the weather?"], cleanEnv());
    assert.equal(result.code, 2);
    assert.equal(result.stdout, "");
    assert.equal(result.stderr.trimEnd().split("\n").length, 1, result.stderr);
    assert.match(result.stderr, /^agentloop: model: no model configured; pass --model provider:model .* --mock .*agentloop demo hotel/);
  });
});

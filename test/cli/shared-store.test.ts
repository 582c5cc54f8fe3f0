// The default embedded store, shared by real processes in one folder with no memory settings:
// a server, `agentloop run --session` and `agentloop events --follow` at once; two agents side by side.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type CliProcess, cleanEnv, runCli, spawnCli } from "./helpers.js";

let folder: string;
const running = new Set<CliProcess>();
before(async () => {
  folder = await mkdtemp(join(tmpdir(), "agentloop-shared-store-"));
});
after(async () => {
  for (const cli of running) cli.child.kill("SIGKILL");
  await rm(folder, { recursive: true, force: true });
});

function start(args: string[], env: NodeJS.ProcessEnv): CliProcess {
  const cli = spawnCli(args, env, folder);
  running.add(cli);
  void cli.exited.then(() => running.delete(cli));
  return cli;
}

async function serve(env: NodeJS.ProcessEnv): Promise<{ cli: CliProcess; url: string }> {
  const cli = start(["serve", "--port", "0", "--host", "127.0.0.1", "--json"], env);
  const [, url] = await cli.waitFor(/"event":"listening".*"url":"([^"]+)"/, "stdout", 30_000);
  return { cli, url };
}

async function chat(url: string, sessionId: string, content: string): Promise<string> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ session_id: sessionId, messages: [{ role: "user", content }] }),
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content;
}

describe("the default embedded store, shared by processes in one folder (no memory settings)", () => {
  it("serve and run --session write one session at once, taking turns; events --follow shows both runs live", async () => {
    const env = cleanEnv();
    // Started first: it waits for the session to appear, then prints each event as it is stored.
    const follow = start(["events", "shared", "--follow", "--json"], env);
    const server = await serve({ ...env, DEBUG_MOCK_RESPONSES: '["served answer"]' });
    // A streamed answer of 40 chunks, 10 ms apart (--mock paces them): the run holds the session a while.
    const words = Array.from({ length: 40 }, (_, index) => `w${index}`).join(" ");
    const cliRun = runCli(["run", "--session", "shared", "from the cli", "--mock", JSON.stringify([words])], env, "", folder);
    await follow.waitFor(/"event_type":"user_message","content":"from the cli"/, "stdout", 30_000);
    // While the CLI's run holds the session, the server's request on it waits its turn.
    const served = chat(server.url, "shared", "from the server");
    const [cli, answer] = await Promise.all([cliRun, served]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /w0 w1 .* w39/);
    assert.equal(answer, "served answer");
    await follow.waitFor(/"event_type":"run_ended"[\s\S]*"event_type":"run_ended"/, "stdout", 30_000);
    const events = follow
      .stdout()
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { event_type: string; content: unknown; metadata: { run_id: string } });
    const types = events.map((event) => `${event.event_type}:${typeof event.content === "string" ? event.content : ""}`);
    assert.deepEqual(types, [
      "run_started:",
      "user_message:from the cli",
      `agent_response:${words}`,
      "run_ended:",
      "run_started:",
      "user_message:from the server",
      "agent_response:served answer",
      "run_ended:",
    ]);
    // The server's run saw the CLI's exchange as history: one session, one log.
    const history = await fetch(`${server.url}/memory/events?session_id=shared`);
    assert.equal(((await history.json()) as { total: number }).total, 8);
    assert.ok(existsSync(join(folder, ".agentloop", "agent", "memory.db")), "the default file is the agent's own");
    follow.child.kill("SIGTERM");
    server.cli.child.kill("SIGTERM");
    assert.equal((await follow.exited).code, 0);
    assert.equal((await server.cli.exited).code, 0);
  });

  it("two servers with different AGENT_NAMEs in one folder each keep their own store", async () => {
    const env = cleanEnv();
    const [coordinator, worker] = await Promise.all([
      serve({ ...env, AGENT_NAME: "coordinator", DEBUG_MOCK_RESPONSES: '["coordinating"]' }),
      serve({ ...env, AGENT_NAME: "worker", DEBUG_MOCK_RESPONSES: '["working"]' }),
    ]);
    try {
      assert.deepEqual(await Promise.all([chat(coordinator.url, "s", "plan it"), chat(worker.url, "s", "do it")]), ["coordinating", "working"]);
      for (const [server, said] of [
        [coordinator, ["plan it", "coordinating"]],
        [worker, ["do it", "working"]],
      ] as const) {
        const response = await fetch(`${server.url}/memory/events?session_id=s`);
        const body = (await response.json()) as { events: Array<{ event_type: string; content: unknown }> };
        assert.deepEqual(
          body.events.filter((event) => ["user_message", "agent_response"].includes(event.event_type)).map((event) => event.content),
          said,
        );
      }
      assert.ok(existsSync(join(folder, ".agentloop", "coordinator", "memory.db")));
      assert.ok(existsSync(join(folder, ".agentloop", "worker", "memory.db")));
    } finally {
      coordinator.cli.child.kill("SIGTERM");
      worker.cli.child.kill("SIGTERM");
      await Promise.all([coordinator.cli.exited, worker.cli.exited]);
    }
  });
});

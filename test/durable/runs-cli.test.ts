// `agentloop serve` in durable mode as a user runs it (a real child process, real PostgreSQL), with
// `agentloop runs`: a finished run can be neither cancelled nor resumed (the same 409 and exit 2
// for both), and stderr holds no DeprecationWarning from pg (DBOS's per-connection SET used to be
// queued on a client already running a query).
import assert from "node:assert/strict";
import { test } from "node:test";
import { cleanEnv, postChat, readyUrl, runCli, spawnCli } from "../cli/helpers.js";
import { durableTestResources } from "./cleanup.js";

const { tag, durableEnv } = durableTestResources("t_runs_cli", "dbos_runs_cli");

test("runs cancel and runs resume of a finished run: 409 from the server, exit 2 with the reason; no DeprecationWarning on the server's stderr", async () => {
  const env = cleanEnv({ ...durableEnv(`runs-cli-${tag}`), DEBUG_MOCK_RESPONSES: '["Hello!"]', NODE_NO_WARNINGS: "0" });
  const server = spawnCli(["serve", "--port", "0", "--host", "127.0.0.1", "--json"], env);
  try {
    const url = await readyUrl(server);
    const chat = await postChat(url, "hi", { session_id: `runs-cli-${tag}` });
    assert.equal(chat.status, 200);
    const runId = chat.headers.get("x-agentloop-run-id")!;
    await chat.json();
    const shown = await runCli(["runs", "show", runId, "--url", url, "--json"], cleanEnv());
    assert.equal(JSON.parse(shown.stdout).status, "SUCCESS", shown.stderr);

    const [cancel, resume] = await Promise.all([runCli(["runs", "cancel", runId, "--url", url], cleanEnv()), runCli(["runs", "resume", runId, "--url", url], cleanEnv())]);
    assert.equal(cancel.code, 2, cancel.stdout);
    assert.equal(cancel.stdout, "");
    assert.match(cancel.stderr, new RegExp(`^agentloop: POST /v1/runs/${runId}/cancel: 409 run "${runId}" already finished \\(SUCCESS\\): nothing to cancel\\n$`));
    assert.equal(resume.code, 2, resume.stdout);
    assert.match(resume.stderr, new RegExp(`^agentloop: POST /v1/runs/${runId}/resume: 409 run "${runId}" already finished \\(SUCCESS\\): nothing to resume\\n$`));
    const raw = await fetch(`${url}/v1/runs/${runId}/cancel`, { method: "POST" });
    assert.equal(raw.status, 409);
    assert.equal(((await raw.json()) as { error: { code: string } }).error.code, "run_finished");
    const help = await runCli(["runs", "--help"], cleanEnv());
    assert.match(help.stdout, /A run that finished cannot be changed/);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  assert.doesNotMatch(server.stderr(), /DeprecationWarning/, server.stderr());
  assert.match(server.stderr(), /durable runs: executor/);
});

test("the PostgreSQL store from the CLI (run --session, chat, sessions, events): no DeprecationWarning on stderr", async () => {
  const { DURABLE: _durable, DURABLE_SCHEMA: _schema, ...store } = durableEnv(`store-cli-${tag}`);
  const env = cleanEnv({ ...store, NODE_NO_WARNINGS: "0" });
  const session = `store-cli-${tag}`;
  const run = await runCli(["run", "hi", "--session", session, "--mock", '["Hello!"]'], env);
  const chat = await runCli(["chat", "--session", session, "--mock", '["Again!"]'], env, "hi again\n");
  const [sessions, events] = await Promise.all([runCli(["sessions"], env), runCli(["events", session], env)]);
  for (const result of [run, chat, sessions, events]) {
    assert.equal(result.code, 0, result.stderr);
    assert.doesNotMatch(result.stderr, /DeprecationWarning/, result.stderr);
  }
  assert.match(events.stdout, /agent_response +Hello![\s\S]*agent_response +Again!/);
});

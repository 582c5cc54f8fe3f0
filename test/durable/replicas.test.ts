// Two durable `serve` replicas (real processes, one PostgreSQL) with many concurrent chats; one is
// killed with SIGKILL in the middle. Every run completes (the other replica recovers the dead one's
// runs through `agentloop runs recover`), every client that lost its stream reattaches to the other
// replica and gets exactly the rest, and no session's runs interleave.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import pg from "pg";
import { runCli } from "../cli/helpers.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { postChat, type Replica, readEvents, startReplica } from "./serve-helpers.js";

// The 50 chats (25 sessions of 2 runs); AGENTLOOP_DURABLE_CHATS changes the number.
const RUNS_PER_SESSION = 2;
const SESSIONS = Math.ceil(Number(process.env.AGENTLOOP_DURABLE_CHATS ?? 50) / RUNS_PER_SESSION);
const tag = randomUUID().slice(0, 8);
const memorySchema = `t_durable_replicas_${tag}`;
const dbosSchema = `dbos_replicas_${tag}`;
const replicas: Replica[] = [];

after(async () => {
  for (const replica of replicas) replica.child.kill("SIGKILL");
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  for (const schema of [memorySchema, dbosSchema]) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

const normalize = (event: string) => event;

test(`${SESSIONS * RUNS_PER_SESSION} concurrent durable chats on two replicas, one killed: all complete, reattached streams lose and repeat nothing, sessions never interleave`, async () => {
  const url = postgresUrl();
  const env = (executor: string) => ({
    AGENT_NAME: "durable",
    MEMORY_TYPE: "postgres",
    MEMORY_POSTGRES_URL: url,
    MEMORY_POSTGRES_SCHEMA: memorySchema,
    DURABLE: "true",
    DURABLE_SCHEMA: dbosSchema,
    DURABLE_EXECUTOR_ID: executor,
    WORK_MS: "1000",
  });
  const victimId = `a-${tag}`;
  const [victim, survivor] = await Promise.all([startReplica(env(victimId)), startReplica(env(`b-${tag}`))]);
  replicas.push(victim, survivor);

  // Every chat is sent (half to each replica); each client keeps what it received.
  const chats = Array.from({ length: SESSIONS * RUNS_PER_SESSION }, (_, index) => {
    const session = `s${index % SESSIONS}-${tag}`;
    const content = `task ${index}`;
    return { index, session, content, replica: index % 2 === 0 ? victim : survivor };
  });
  let started = 0;
  let markStarted!: () => void;
  const someStarted = new Promise<void>((resolve) => {
    markStarted = resolve;
  });
  // A session's second chat is sent once its first is queued (its response headers came): DBOS
  // orders a session's runs by their creation time, so two chats of one session sent at the same
  // instant to two replicas have no defined order, and a recovered run could then go after a later one.
  const posted = new Map<string, Promise<unknown>>();
  const clients = await Promise.all(
    chats.map(async (chat) => {
      const earlier = posted.get(chat.session);
      const post = (async () => {
        await earlier;
        return postChat(chat.replica.url, chat.content, chat.session);
      })();
      posted.set(chat.session, post);
      const response = await post;
      if (response.status !== 200) assert.fail(`${response.status} ${await response.text()}\n${chat.replica.log()}`);
      const runId = response.headers.get("x-agentloop-run-id");
      assert.match(runId ?? "", /^run_/);
      let counted = false;
      const reading = readEvents(response, (event) => {
        // A progress block: the run is going (its tool call is running).
        if (!counted && event.includes("progress")) {
          counted = true;
          if (++started === 6) markStarted();
        }
      });
      return { ...chat, runId: runId!, reading };
    }),
  );
  // Every client has its run id; runs are going (each session's second run waits for its first).
  await someStarted;
  victim.child.kill("SIGKILL");
  await victim.exited;

  // The dead replica's runs go back on the queue: the survivor runs them.
  const recovered = await runCli(["runs", "recover", "--executor", victimId, "--url", survivor.url], { ...process.env, NO_COLOR: "1" });
  assert.equal(recovered.code, 0, recovered.stderr);
  assert.match(recovered.stdout, /^recovered \d+ run\(s\) of executor a-/m);

  const outcomes = await Promise.all(
    clients.map(async (client) => {
      const first = await client.reading;
      if (first.complete) return { client, events: first.events, reattached: false };
      // The stream broke with the replica: reattach to the other one after the last event received.
      assert.equal(client.replica, victim, `a stream from the surviving replica broke (${client.runId})`);
      const rest = await readEvents(await fetch(`${survivor.url}/v1/runs/${client.runId}/events?after=${first.events.length}`));
      assert.ok(rest.complete, `reattached stream of ${client.runId} did not end with [DONE] (${rest.error ?? "it ended"}): ${rest.events.join("\n")}`);
      return { client, events: [...first.events, ...rest.events], reattached: true };
    }),
  );
  assert.ok(
    outcomes.some((outcome) => outcome.reattached),
    "no stream was cut by the kill",
  );
  for (const { client, events } of outcomes) {
    // The whole journal, read again from the start: the client got exactly it, in order.
    const whole = await readEvents(await fetch(`${survivor.url}/v1/runs/${client.runId}/events`));
    assert.deepEqual(events.map(normalize), whole.events.map(normalize), `run ${client.runId}`);
    const text = events
      .filter((event) => event !== "[DONE]")
      .map((event) => JSON.parse(event) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }> })
      .map((chunk) => chunk.choices[0]?.delta.content ?? "")
      .filter((content) => !content.startsWith("{"))
      .join("");
    assert.equal(text, `Done: worked on ${client.content}.`, `run ${client.runId}`);
    assert.match(events.at(-2)!, /"finish_reason":"stop"/);
  }

  // Each session's log: its runs one after the other (never interleaved), each run recorded once.
  for (let index = 0; index < SESSIONS; index++) {
    const session = `s${index}-${tag}`;
    const body = (await (await fetch(`${survivor.url}/memory/events?session_id=${session}&limit=1000`)).json()) as {
      events: Array<{ event_type: string; content: unknown; metadata: { run_id: string } }>;
    };
    const runOrder = body.events.map((event) => event.metadata.run_id).filter((runId, position, all) => position === 0 || all[position - 1] !== runId);
    assert.equal(new Set(runOrder).size, runOrder.length, `session ${session} interleaved its runs: ${runOrder.join(", ")}`);
    assert.equal(runOrder.length, RUNS_PER_SESSION, `session ${session}`);
    for (const runId of runOrder) {
      const types = body.events.filter((event) => event.metadata.run_id === runId).map((event) => event.event_type);
      assert.deepEqual(types, ["run_started", "user_message", "tool_call", "tool_result", "agent_response", "run_ended"], `session ${session} run ${runId}`);
    }
  }
  const listed = await runCli(["runs", "list", "--url", survivor.url, "--json"], process.env);
  assert.equal(listed.code, 0, listed.stderr);
  const runs = (JSON.parse(listed.stdout) as { runs: Array<{ runId: string; status: string }> }).runs;
  for (const client of clients) assert.equal(runs.find((run) => run.runId === client.runId)?.status, "SUCCESS", client.runId);
});

// `agentloop sessions export | import`: sessions move embedded → PostgreSQL → embedded unchanged.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, describe, it } from "node:test";
import { exportSessionsCommand, importSessionsCommand } from "../../src/cli/commands/sessions-transfer.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import type { MemoryEvent } from "../../src/memory/index.js";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { captured, cleanEnv, runCli } from "./helpers.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-transfer-"));
after(async () => {
  rmSync(root, { recursive: true, force: true });
  await dropSchemas();
});

/** What must survive a move: everything but the seqs' numbering, which each store assigns. */
const portable = (events: MemoryEvent[]) => events.map(({ seq: _seq, ...event }) => event);

async function exported(env: NodeJS.ProcessEnv, sessions: string[] = []): Promise<string> {
  const stdout = captured();
  const stderr = captured();
  assert.equal(await exportSessionsCommand(sessions, {}, { stdout, stderr, env }), 0, stderr.text());
  return stdout.text();
}

async function imported(env: NodeJS.ProcessEnv, lines: string): Promise<string> {
  const stderr = captured();
  assert.equal(await importSessionsCommand(undefined, {}, { stdin: Readable.from([lines]), stdout: captured(), stderr, env }), 0, stderr.text());
  return stderr.text();
}

describe("agentloop sessions export | import", () => {
  it("round-trips sessions embedded → PostgreSQL → embedded: events, ids, times, content and metadata unchanged", async () => {
    const source = { MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "source.db") };
    const postgres = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("transfer") };
    const back = { MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "back.db") };
    const store = await openEmbeddedStore({ path: source.MEMORY_PATH });
    try {
      await store.append("alpha", [
        { event_type: "user_message", content: "héllo ✓ \u{1F600}", metadata: { run_id: "r1" } },
        { event_type: "tool_call", content: { tool: "t", arguments: { n: [1, 2.5, null], nested: { deep: true } } }, metadata: { tool_call_id: "c1" } },
        { event_type: "tool_result", content: { tool: "t", result: "line 1\nline 2" }, timestamp: "2030-01-02T03:04:05.678Z" },
      ]);
      await store.append("beta", [{ event_type: "agent_response", content: "b" }]);
      await store.append("alpha", [{ event_type: "agent_response", content: null }]);
    } finally {
      await store.close();
    }
    const original = await openEmbeddedStore({ path: source.MEMORY_PATH });
    const expected = { alpha: portable(await original.events("alpha")), beta: portable(await original.events("beta")) };
    await original.close();

    const lines = await exported(cleanEnv(source));
    assert.equal(lines.trim().split("\n").length, 5);
    assert.match(await imported(cleanEnv(postgres), lines), /imported 5 events into 2 sessions/);
    const middle = await openPostgresStore({ url: postgresUrl(), schema: postgres.MEMORY_POSTGRES_SCHEMA });
    try {
      assert.deepEqual(portable(await middle.events("alpha")), expected.alpha);
      assert.deepEqual(portable(await middle.events("beta")), expected.beta);
      assert.deepEqual(
        (await middle.listSessions()).map((session) => session.session_id),
        ["beta", "alpha"],
        "sessions keep their update order",
      );
    } finally {
      await middle.close();
    }

    const again = await exported(cleanEnv(postgres));
    assert.match(await imported(cleanEnv(back), again), /imported 5 events into 2 sessions/);
    // Run again: every event is already there.
    assert.match(await imported(cleanEnv(back), again), /imported 0 events into 2 sessions \(5 already there, skipped\)/);
    const parse = (text: string) => text.trim().split("\n").map((line) => JSON.parse(line));
    assert.deepEqual(parse(await exported(cleanEnv(back))), parse(lines), "the same events as the first export, seqs included");
    assert.equal((await exported(cleanEnv(back), ["beta"])).trim().split("\n").length, 1);
  });

  it("through the CLI: export to a file, import it elsewhere; bad input names its line and imports nothing", async () => {
    const from = cleanEnv({ MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "cli-from.db") });
    const to = cleanEnv({ MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "cli-to.db") });
    const store = await openEmbeddedStore({ path: from.MEMORY_PATH });
    await store.append("s", [{ event_type: "user_message", content: "moved" }]);
    await store.close();
    const file = join(root, "export.jsonl");
    const exportRun = await runCli(["sessions", "export", "--output", file], from);
    assert.equal(exportRun.code, 0, exportRun.stderr);
    assert.match(exportRun.stderr, /exported 1 events of 1 sessions/);
    const importRun = await runCli(["sessions", "import", file], to);
    assert.equal(importRun.code, 0, importRun.stderr);
    assert.equal(await exported(to), readFileSync(file, "utf8"));

    const bad = join(root, "bad.jsonl");
    writeFileSync(bad, `${readFileSync(file, "utf8")}{"session_id":"x","event_type":""}\n`);
    const stderr = captured();
    assert.equal(await importSessionsCommand(bad, {}, { stdout: captured(), stderr, env: cleanEnv({ MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "bad.db") }) }), 1);
    assert.match(stderr.text(), /import: line 2: event_type must be a non-empty string \(nothing was imported\)/);
    for (const [line, problem] of [
      ["not json", /line 1: not JSON/],
      ["[1]", /line 1: expected an event object/],
      ['{"event_type":"x"}', /line 1: session_id must be a non-empty string/],
      ['{"session_id":"s","event_type":"x","timestamp":"soon"}', /line 1: timestamp must be an ISO 8601 time/],
      ['{"session_id":"s","event_type":"x","metadata":[]}', /line 1: metadata must be an object/],
    ] as const) {
      const errors = captured();
      assert.equal(await importSessionsCommand(undefined, {}, { stdin: Readable.from([line]), stdout: captured(), stderr: errors, env: to }), 1);
      assert.match(errors.text(), problem);
    }
    const missing = captured();
    assert.equal(await exportSessionsCommand(["nope"], {}, { stdout: captured(), stderr: missing, env: to }), 1);
    assert.match(missing.text(), /session "nope" not found/);
  });
});

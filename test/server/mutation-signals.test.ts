// src/server/server.ts's `startAgentServer({ handleSignals: true })` as an operator sees it, in real
// processes (test/server/signals-child.ts): one signal drains and exits 0 (with no `beforeExit`); a
// failing `beforeExit` changes no exit code; a second during the drain aborts the runs still going and exits 130 (SIGINT) or
// 143 (SIGTERM); a third exits at once; a shutdown that fails exits 1 naming what failed. The four processes run side by side.
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { type CliProcess, spawnNode } from "../cli/helpers.js";
import { tsChild } from "../ts-child.js";
import { postJson } from "./helpers.js";

const child = join(fileURLToPath(new URL(".", import.meta.url)), "signals-child.ts");

const started: CliProcess[] = [];
after(() => {
  // A failed assertion leaves its process running: killed, so the test file ends.
  for (const { child } of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

async function start(beforeExit: "none" | "ok" | "fail" | "hang", env: Record<string, string> = {}) {
  const server = spawnNode(await tsChild(child), { ...process.env, BEFORE_EXIT: beforeExit, ...env });
  started.push(server);
  const [, url] = (await server.waitFor(/listening (\S+)\n/)) as RegExpMatchArray;
  return { server, url: url! };
}

/** A streamed chat the held model never answers (its headers wait for its first chunk): its body, once the run is aborted. */
async function heldStream(server: CliProcess, url: string): Promise<{ body: Promise<string> }> {
  const body = postJson(`${url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], stream: true, session_id: "held" }).then((response) => {
    assert.equal(response.status, 200);
    return response.text();
  });
  await server.waitFor(/model reached\n/);
  return { body };
}

describe("startAgentServer with handleSignals", () => {
  it("one signal: drains, runs beforeExit, exits 0; two: aborts the runs, exits 130 / 143; three: exits at once; a failed shutdown: exits 1 naming it", async () => {
    await Promise.all([
      (async () => {
        // SIGTERM, nothing going on, no beforeExit: a clean exit.
        const { server } = await start("none");
        server.child.kill("SIGTERM");
        const { code } = await server.exited;
        assert.equal(code, 0, server.stderr());
        assert.doesNotMatch(server.stdout(), /before exit/);
        assert.deepEqual(server.stderr().trim().split("\n"), ["[signals] SIGTERM received: shutting down", "[signals] shut down"]);
      })(),
      (async () => {
        // SIGINT twice with a run held: the stream gets the abort and [DONE]; beforeExit rejects; the exit is 130.
        const { server, url } = await start("fail");
        const { body } = await heldStream(server, url);
        server.child.kill("SIGINT");
        await server.waitFor(/shutting down: waiting up to 600000 ms for 1 request\(s\)/, "stderr");
        server.child.kill("SIGINT");
        assert.match(await body, /"code":"aborted"\}\}\n\ndata: \[DONE\]\n\n$/);
        const { code } = await server.exited;
        assert.equal(code, 130, server.stderr());
        assert.match(server.stdout(), /before exit\n/);
        assert.match(server.stderr(), /^\[signals\] SIGINT received: shutting down\n[\s\S]*\[signals\] SIGINT received again: aborting the runs still going\n/);
        assert.match(server.stderr(), /session held ABORTED/);
      })(),
      (async () => {
        // SIGTERM twice, then (beforeExit never settling) a third: exits 143 at once.
        const { server, url } = await start("hang");
        const { body } = await heldStream(server, url);
        server.child.kill("SIGTERM");
        await server.waitFor(/shutting down: waiting up to/, "stderr");
        server.child.kill("SIGTERM");
        await body;
        await server.waitFor(/before exit\n/);
        server.child.kill("SIGTERM");
        const { code, signal } = await server.exited;
        assert.deepEqual({ code, signal }, { code: 143, signal: null }, server.stderr());
        assert.match(server.stderr(), /\[signals\] SIGTERM received again: aborting the runs still going\n[\s\S]*\[signals\] SIGTERM received a third time: exiting now\n$/);
      })(),
      (async () => {
        // SIGTERM, and a part of the shutdown fails (the memory store's close): the failure named on stderr, exit 1.
        const { server } = await start("none", { STORE_CLOSE_FAILS: "1" });
        server.child.kill("SIGTERM");
        const { code } = await server.exited;
        assert.equal(code, 1, server.stderr());
        assert.deepEqual(server.stderr().trim().split("\n"), ["[signals] SIGTERM received: shutting down", "[signals] shutdown failed: the memory store (memory): the database went away"]);
      })(),
    ]);
  });
});

// The README's example is a real file; this keeps the two identical and proves the example runs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { cleanEnv, readyUrl, spawnCli } from "./cli/helpers.js";
import { tsChild } from "./ts-child.js";

const root = fileURLToPath(new URL("../", import.meta.url));

test("README shows examples/quickstart.ts verbatim, and it runs", async () => {
  const readme = readFileSync(`${root}README.md`, "utf8");
  const example = readFileSync(`${root}examples/quickstart.ts`, "utf8").trim();
  assert.ok(readme.includes(example), "README's example block must equal examples/quickstart.ts");
  const env = { ...process.env };
  delete env.DEBUG_MOCK_RESPONSES;
  const run = spawnSync(process.execPath, await tsChild(`${root}examples/quickstart.ts`), { cwd: root, encoding: "utf8", env, timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /\[get_weather [\d.]+ ms\] Paris: 21°C and sunny/);
  // The trivial tool's duration is its own (well under a millisecond), not the validator's warm-up
  // (that was billed to it: 140–265 ms); 100 ms leaves room for a loaded machine.
  const durations = [...run.stdout.matchAll(/\[get_weather ([\d.]+) ms\]/g)].map((match) => Number(match[1]));
  assert.equal(durations.length, 2);
  for (const duration of durations) assert.ok(duration < 100, `get_weather took ${duration} ms`);
  assert.match(run.stdout, /Paris and Oslo are both 21°C and sunny today\.\nCOMPLETED after 2 model calls/);
});

test("README's agent server example is true: the served agent has the tool the script calls", async () => {
  const readme = readFileSync(`${root}README.md`, "utf8");
  const section = readme.slice(readme.indexOf("### The agent server"));
  const command = /DEBUG_MOCK_RESPONSES='([^']*)' \\\n {2}npx agentloop serve (.*) --port 8000\n/.exec(section);
  const body = /-d '([^']*)'/.exec(section);
  assert.ok(command && body, "the example has a DEBUG_MOCK_RESPONSES script, a serve command line and a request body");
  const [, script, flags] = command;
  const cli = spawnCli(["serve", ...flags.split(" "), "--port", "0", "--host", "127.0.0.1", "--json"], cleanEnv({ DEBUG_MOCK_RESPONSES: script }));
  try {
    const url = await readyUrl(cli, 60_000);
    const response = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: body[1] });
    const content = (await response.text())
      .split("\n")
      .filter((line) => line.startsWith("data: {"))
      .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? "")
      .join("");
    assert.match(content, /\{"type":"progress","step":1,"max_steps":\d+,"action":"tool_call","target":"echo"\}/);
    assert.match(content, /The echo tool says: Hanukkah starts on 2026-12-04\.$/);
    const { events } = (await (await fetch(`${url}/memory/events?session_id=s1`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
    assert.match(JSON.stringify(events.find((event) => event.event_type === "tool_result")?.content), /Echo: Hanukkah starts on 2026-12-04/);
  } finally {
    cli.child.kill("SIGTERM");
    await cli.exited;
  }
});

test("examples/approvals.ts runs: a denied tool, a stop for approval, a resume from JSON", async () => {
  const env = { ...process.env };
  delete env.DEBUG_MOCK_RESPONSES;
  const run = spawnSync(process.execPath, await tsChild(`${root}examples/approvals.ts`), { cwd: root, encoding: "utf8", env, timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^INTERRUPTED \[ 'send_mail\(\{"to":"ada@example.com"\}\)' \]$/m);
  assert.match(run.stdout, /^delete_file: Tool denied by guardrail: this assistant never deletes$/m);
  assert.match(run.stdout, /^send_mail: sent to ada@example.com$/m);
  assert.match(run.stdout, /^COMPLETED Mail sent; I may not delete files\.$/m);
});

test("README's commands name the CLI as `npx agentloop` (a bare `agentloop` is on no PATH after the Quick start)", () => {
  const readme = readFileSync(`${root}README.md`, "utf8");
  // The commands: every line of a sh block, the `$ ` lines of a console block (the others are output).
  const commands = [...readme.matchAll(/```(sh|console)\n([\s\S]*?)```/g)].flatMap(([, kind, block]) =>
    block
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => kind === "sh" || line.startsWith("$ "))
      .map((line) => line.replace(/^\$ /, "")),
  );
  assert.ok(commands.some((line) => line.startsWith("npx agentloop ")));
  const bare = commands.filter((line) => /^([A-Z_]+=\S+ )*agentloop /.test(line));
  assert.deepEqual(bare, []);
  assert.doesNotMatch(readme, /npm start -- (run|serve|demo|chat|code)\b/);
});

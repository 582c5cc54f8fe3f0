// `agentloop demo hotel`: seed 001's three scenarios on the scripted model, in native tool calls
// and in the plan-next-wave protocol, each a real child process.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { cleanEnv, repositoryRoot, runCli } from "./helpers.js";

interface Event {
  type: string;
  step?: number;
  name?: string;
  target?: string;
  output?: unknown;
  delta?: string;
  state?: string;
}

/** Runs a scenario with --json: the tool calls of each wave (by progress step), the answer, the final state. */
async function scenario(number: 1 | 2 | 3, mode: "native" | "plan") {
  const result = await runCli(["demo", "hotel", "--scenario", String(number), "--tool-call-mode", mode, "--json"], cleanEnv());
  assert.equal(result.code, 0, result.stderr);
  const events = result.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Event);
  const waves: string[][] = [];
  for (const event of events) if (event.type === "progress") (waves[event.step! - 1] ??= []).push(event.target ?? "");
  const toolStarts = events.filter((event) => event.type === "tool-start").length;
  const outputs = events.filter((event) => event.type === "tool-end").map((event) => `${event.name} ${typeof event.output === "string" ? event.output : JSON.stringify(event.output)}`);
  const answer = events
    .filter((event) => event.type === "text-delta")
    .map((event) => event.delta)
    .join("");
  return { waves, toolStarts, outputs, answer, state: events.at(-1)?.state };
}

for (const mode of ["native", "plan"] as const) {
  describe(`agentloop demo hotel --tool-call-mode ${mode}`, { concurrency: true }, () => {
    it('scenario 1 "one night in Hanukkah": 2 waves, the holiday first, then one night of availability', async () => {
      const run = await scenario(1, mode);
      assert.equal(run.state, "COMPLETED");
      assert.equal(run.toolStarts, 2);
      assert.deepEqual(run.waves, [["calendar.resolve_holiday"], ["pms.get_availability"]]);
      assert.match(run.outputs[0], /Hanukkah is from 2026-12-04 to 2026-12-11/);
      assert.match(run.outputs[1], /"check_in":"2026-12-04","check_out":"2026-12-05","nights":1/);
      assert.match(run.answer, /^For one night at the start of Hanukkah/);
    });

    it('scenario 2 "Hanukkah and also next weekend": 2 waves of 2 parallel calls', async () => {
      const run = await scenario(2, mode);
      assert.equal(run.state, "COMPLETED");
      assert.equal(run.toolStarts, 4);
      assert.deepEqual(run.waves, [
        ["calendar.resolve_holiday", "calendar.resolve_date_hint"],
        ["pms.get_availability", "pms.get_availability"],
      ]);
      assert.match(run.outputs[1], /Next weekend is 2026-11-27 to 2026-11-29/);
      assert.match(run.answer, /For next weekend \(2026-11-27 to 2026-11-29, two nights\)/);
    });

    it('scenario 3 "January 17-19": 1 wave', async () => {
      const run = await scenario(3, mode);
      assert.equal(run.state, "COMPLETED");
      assert.deepEqual(run.waves, [["pms.get_availability"]]);
      assert.match(run.outputs[0], /^pms\.get_availability .*"check_in":"2027-01-17","check_out":"2027-01-19","nights":2/);
      assert.match(run.answer, /^Every room is free from 2027-01-17 to 2027-01-19/);
    });
  });
}

describe("agentloop demo hotel, as people see it", () => {
  it("shows both waves with each tool's duration and result, then the answer; npm run demo runs scenario 2", async () => {
    const { code, stdout, stderr } = await runCli(["demo", "hotel"], cleanEnv({ NO_COLOR: "1" }));
    assert.equal(code, 0, stderr);
    assert.match(stderr, /^scenario 2 \(native\): Check availability for Hanukkah and also next weekend\n/);
    assert.match(stdout, /● wave 1\n[\s\S]*✓ calendar\.resolve_holiday [\d.]+ m?s {2}Hanukkah is from 2026-12-04 to 2026-12-11/);
    assert.match(stdout, /● wave 2\n[\s\S]*✓ pms\.get_availability/);
    assert.match(stdout, /Here is what I found\./);
    assert.match(stderr, /COMPLETED · 3 model calls · 2 waves · 4 tool calls/);
    const packageJson = JSON.parse(readFileSync(`${repositoryRoot}package.json`, "utf8")) as { scripts: Record<string, string> };
    assert.match(packageJson.scripts.demo, / demo hotel --scenario 2$/);
  });

  it("rejects a scenario that does not exist", async () => {
    const { code, stderr } = await runCli(["demo", "hotel", "--scenario", "4"], cleanEnv());
    assert.equal(code, 2);
    assert.match(stderr, /argument '4' is invalid\. Allowed choices are 1, 2, 3/);
  });
});

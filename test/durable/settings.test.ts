// The durable mode's settings: DURABLE and its variables, the agent file's `durable`, and bad values.
import assert from "node:assert/strict";
import { hostname } from "node:os";
import { test } from "node:test";
import { parseAgentFile, settingsFrom } from "../../src/server/index.js";

test("DURABLE=true turns durable mode on: executor id from DURABLE_EXECUTOR_ID (default the host name), DBOS schema from DURABLE_SCHEMA", () => {
  assert.equal(settingsFrom({}, {}).durable, undefined);
  assert.deepEqual(settingsFrom({}, { DURABLE: "true" }).durable, { executorId: hostname(), schema: "dbos" });
  assert.deepEqual(settingsFrom({}, { DURABLE: "1", DURABLE_EXECUTOR_ID: "agent-0", DURABLE_SCHEMA: "runs" }).durable, { executorId: "agent-0", schema: "runs" });
  assert.equal(settingsFrom({ durable: true }, { DURABLE: "false" }).durable, undefined);
  assert.throws(() => settingsFrom({}, { DURABLE: "maybe" }), /DURABLE: must be true or false, got "maybe"/);
});

test("the agent file's durable: true or { executorId, schema }; anything else is refused by name", () => {
  const file = parseAgentFile("durable:\n  executorId: agent-1\n  schema: dbos_agents\n", "agent.yaml");
  assert.deepEqual(settingsFrom(file, {}).durable, { executorId: "agent-1", schema: "dbos_agents" });
  assert.deepEqual(settingsFrom(parseAgentFile("durable: true\n", "agent.yaml"), { DURABLE_EXECUTOR_ID: "env-wins" }).durable, { executorId: "env-wins", schema: "dbos" });
  assert.throws(() => parseAgentFile("durable: yes please\n", "agent.yaml"), /agent.yaml: durable: must be true, false or \{ executorId, schema \}/);
  assert.throws(() => parseAgentFile("durable:\n  replicas: 3\n", "agent.yaml"), /agent.yaml: durable: unknown setting "replicas" \(known: executorId, schema\)/);
});

// The durable agent's handle before launch(): each call that needs DBOS refuses, naming itself, and
// bad arguments are refused first. No database is reached (nothing launches in this process).
import assert from "node:assert/strict";
import { test } from "node:test";
import { durableAgent } from "../../src/durable/index.js";
import { Agent, ScriptedModel } from "../../src/index.js";

const payer = durableAgent(new Agent({ name: "unlaunched", model: new ScriptedModel(["x"]) }), { databaseUrl: "postgres://127.0.0.1:1/none" });

test("before launch(): every call that needs DBOS refuses, naming itself; bad arguments are refused first", async () => {
  assert.throws(() => durableAgent(new Agent({ model: new ScriptedModel(["x"]) }), undefined as never), /databaseUrl must be a postgres:\/\/ URL, got undefined/);
  assert.throws(() => durableAgent(new Agent({ model: new ScriptedModel(["x"]) }), { databaseUrl: "xpostgres://h/d" }), /databaseUrl must be a postgres:\/\/ URL/);
  assert.throws(() => durableAgent(new Agent({ model: new ScriptedModel(["x"]) }), { databaseUrl: "postgres:/h/d" }), /databaseUrl must be a postgres:\/\/ URL/);
  await assert.rejects(payer.run(42 as never), (error: unknown) => error instanceof TypeError && /durable run: the input must be a string/.test(error.message));
  const refusals: Array<[string, () => Promise<unknown>]> = [
    ["run", () => payer.run("x")],
    ["exists", () => payer.exists("r")],
    ["approvalWait", () => payer.approvalWait("r")],
    ["expiredApprovals", () => payer.expiredApprovals("r")],
    ["decide", () => payer.decide("r", {})],
    ["list", () => payer.list()],
    ["show", () => payer.show("r")],
    ["cancel", () => payer.cancel("r")],
    ["resume", () => payer.resume("r")],
    ["recover", () => payer.recover(["e"])],
  ];
  for (const [name, call] of refusals) await assert.rejects(call(), new RegExp(`^Error: durable ${name}: call launch\\(\\) first$`), name);
  assert.throws(() => payer.readJournal("r"), /^Error: durable readJournal: call launch\(\) first$/);
});

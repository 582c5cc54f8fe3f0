// Guardrails and approvals: a denied tool, then a run that stops for a person's yes and goes on
// from its JSON checkpoint. Run it with: npx tsx examples/approvals.ts
import { Agent, defineTool, ScriptedModel } from "agentloop";

const deleteFile = defineTool({ name: "delete_file", description: "Deletes a file", parameters: { type: "object" }, execute: () => "deleted" });
const sendMail = defineTool({
  name: "send_mail",
  description: "Sends an email",
  parameters: { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
  needsApproval: true,
  execute: ({ to }) => `sent to ${to}`,
});

const agent = new Agent({
  name: "assistant",
  // No API key needed: the model asks for both tools in one wave, then answers.
  model: new ScriptedModel([
    JSON.stringify({ tool_calls: [{ id: "d1", name: "delete_file", arguments: {} }, { id: "m1", name: "send_mail", arguments: { to: "ada@example.com" } }] }),
    "Mail sent; I may not delete files.",
  ]),
  tools: [deleteFile, sendMail],
  guardrails: { deniedTools: [{ tools: "delete_*", reason: "this assistant never deletes" }] },
  onApproval: "interrupt",
});

const stopped = await agent.run("Clean up and mail Ada");
console.log(stopped.state, stopped.checkpoint?.pending.map((call) => `${call.toolName}(${JSON.stringify(call.arguments)})`));
// The checkpoint is plain JSON: keep it in a database, a file, a queue… and resume anywhere.
const checkpoint = JSON.parse(JSON.stringify(stopped.checkpoint));
const result = await agent.resume(checkpoint, { decisions: { m1: { approve: true } } });
for (const message of result.messages) if (message.role === "tool") console.log(`${message.toolName}: ${message.content}`);
console.log(result.state, result.text);

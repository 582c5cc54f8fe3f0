import { randomUUID } from "node:crypto";
import { type Message, Role } from "@a2a-js/sdk";

/** An A2A text part. */
export const textPart = (value: string) => ({ content: { $case: "text" as const, value }, metadata: undefined, filename: "", mediaType: "text/plain" });

/** An A2A message from the agent on a task, with one text part. */
export const agentMessage = (taskId: string, contextId: string, text: string): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

// The chat protocols the server benchmarks send the same question through (scenarios 5 and 10):
// OpenAI chat completions, the AI SDK UI message stream (`/api/chat`) and AG-UI (`/ag-ui`).
import { SERVER_ANSWER } from "./server-answer.js";

export const QUESTION = "Is anything free next weekend?";

/**
 * A protocol a chat goes through: its path, the body of chat number `index` (a session of its own
 * where the protocol names one), and the answer text read back from its SSE events' data.
 */
export interface Protocol {
  name: string;
  path: string;
  body(index: number): string;
  /** Request headers of chat number `index` beside the content type, if any. */
  headers?(index: number): Record<string, string>;
  textOf(data: unknown): string;
}

const CHAT_BODY = JSON.stringify({ model: "bench", stream: true, messages: [{ role: "user", content: QUESTION }] });

export const CHAT_COMPLETIONS: Protocol = {
  name: "/v1/chat/completions",
  path: "/v1/chat/completions",
  body: () => CHAT_BODY,
  textOf: (data) => (data as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "",
};

/**
 * Chat completions naming its session (`x-session-id`, a new one per chat, as the UI protocols'
 * chats do): the server takes the session's lock and loads its history before the run, which a
 * chat without the header (a session the server makes, known to nobody) skips. The fair base for
 * the UI protocols on a store (scenario 10).
 */
export const CHAT_COMPLETIONS_SESSION: Protocol = {
  ...CHAT_COMPLETIONS,
  name: "/v1/chat/completions + x-session-id",
  headers: (index) => ({ "x-session-id": `bench-${index}` }),
};

/** The body `useChat`'s `DefaultChatTransport` sends for a new chat. */
export const UI_CHAT: Protocol = {
  name: "/api/chat",
  path: "/api/chat",
  body: (index) => JSON.stringify({ id: `bench-${index}`, messages: [{ id: `u-${index}`, role: "user", parts: [{ type: "text", text: QUESTION }] }], trigger: "submit-message" }),
  textOf: (data) => {
    const chunk = data as { type: string; delta?: string };
    return chunk.type === "text-delta" ? (chunk.delta ?? "") : "";
  },
};

/** A `RunAgentInput` as `@ag-ui/client`'s `HttpAgent` sends it. */
export const AG_UI: Protocol = {
  name: "/ag-ui",
  path: "/ag-ui",
  body: (index) =>
    JSON.stringify({ threadId: `bench-${index}`, runId: `run-${index}`, state: {}, messages: [{ id: `u-${index}`, role: "user", content: QUESTION }], tools: [], context: [], forwardedProps: {} }),
  textOf: (data) => {
    const event = data as { type: string; delta?: string };
    return event.type === "TEXT_MESSAGE_CONTENT" ? (event.delta ?? "") : "";
  },
};

export const PROTOCOLS: readonly Protocol[] = [CHAT_COMPLETIONS, UI_CHAT, AG_UI];

/** The answer text of a whole SSE body of `protocol`; throws unless it is the scripted answer. */
export function checkAnswer(protocol: Protocol, status: number | undefined, body: string, where: string): void {
  if (status !== 200) throw new Error(`${where}: HTTP ${status}: ${body.slice(0, 300)}`);
  let text = "";
  for (const event of body.split("\n\n")) {
    if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
    text += protocol.textOf(JSON.parse(event.slice(6)));
  }
  if (text !== SERVER_ANSWER) throw new Error(`${where}: wrong streamed answer ${JSON.stringify(text.slice(0, 200))}`);
}

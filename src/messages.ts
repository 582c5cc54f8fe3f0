/**
 * The unified message model. One conversation in this shape can be sent to any provider;
 * each adapter maps it to its own wire format.
 */

/** Opaque provider data carried on a part so a provider can round-trip it unchanged
 * (Anthropic thinking signatures, OpenAI Responses reasoning items, item ids, ...). */
export type ProviderData = Record<string, unknown>;

export interface TextPart {
  type: "text";
  text: string;
  providerData?: ProviderData;
}

export interface ImagePart {
  type: "image";
  /** base64 data without the data: prefix, or an https URL */
  data?: string;
  url?: string;
  mediaType?: string;
}

export interface ReasoningPart {
  type: "reasoning";
  text: string;
  /** Provider data needed to send the reasoning back verbatim (signatures, encrypted content). */
  providerData?: ProviderData;
}

export interface ToolCallPart {
  type: "tool-call";
  /** The provider's call id (OpenAI `call_...`, Anthropic `toolu_...`). */
  id: string;
  /** The tool's name as the agent knows it (adapters map provider-legal names back). */
  name: string;
  /** The arguments exactly as the model produced them (usually JSON text). */
  arguments: string;
  providerData?: ProviderData;
}

export type UserContent = string | Array<TextPart | ImagePart>;
export type AssistantPart = TextPart | ReasoningPart | ToolCallPart;

export interface SystemMessage {
  role: "system";
  content: string;
}
export interface UserMessage {
  role: "user";
  content: UserContent;
}
export interface AssistantMessage {
  role: "assistant";
  content: AssistantPart[];
  providerData?: ProviderData;
}
export interface ToolResultMessage {
  role: "tool";
  toolCallId: string;
  toolName: string;
  content: string | Array<TextPart | ImagePart>;
  isError?: boolean;
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage;

export function textOf(message: Message): string {
  const content = message.content;
  if (typeof content === "string") return content;
  let text = "";
  for (const part of content) if (part.type === "text") text += part.text;
  return text;
}

export function toolCallsOf(message: AssistantMessage): ToolCallPart[] {
  return message.content.filter((part): part is ToolCallPart => part.type === "tool-call");
}

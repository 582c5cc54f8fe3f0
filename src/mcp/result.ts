import type { ImagePart, TextPart } from "../messages.js";
import type { ToolResultValue } from "../tools/tool.js";

/** The parts of an MCP `CallToolResult` this module reads (kept structural: the SDK types are large). */
export interface McpCallResult {
  content?: Array<Record<string, unknown>>;
  structuredContent?: unknown;
  isError?: boolean;
  /** Old servers answer `{toolResult}` (protocol 2024-10-07). */
  toolResult?: unknown;
}

function resourceText(resource: Record<string, unknown>): string {
  if (typeof resource.text === "string") return resource.text;
  const mime = typeof resource.mimeType === "string" ? ` (${resource.mimeType})` : "";
  return `[resource ${String(resource.uri ?? "")}${mime}]`;
}

/** One MCP content block → a text or image part. Audio and binary resources become a short text note. */
function toPart(block: Record<string, unknown>): TextPart | ImagePart {
  switch (block.type) {
    case "text":
      return { type: "text", text: String(block.text ?? "") };
    case "image":
      return { type: "image", data: String(block.data ?? ""), mediaType: typeof block.mimeType === "string" ? block.mimeType : undefined };
    case "audio":
      return { type: "text", text: `[audio ${String(block.mimeType ?? "")}]` };
    case "resource_link": {
      const name = typeof block.name === "string" ? ` ${block.name}` : "";
      return { type: "text", text: `[resource link ${String(block.uri ?? "")}${name}]` };
    }
    case "resource":
      return { type: "text", text: resourceText((block.resource ?? {}) as Record<string, unknown>) };
    default:
      return { type: "text", text: JSON.stringify(block) };
  }
}

/**
 * Maps an MCP tool result to a core tool result: text blocks joined with newlines, images kept as
 * image parts, `structuredContent` kept as `structured` (and sent as JSON text when the server
 * gave no text), `isError` carried over.
 */
export function mapCallResult(result: McpCallResult): ToolResultValue {
  if (result.content === undefined && "toolResult" in result) {
    const text = typeof result.toolResult === "string" ? result.toolResult : JSON.stringify(result.toolResult);
    return { content: text ?? "", isError: result.isError === true };
  }
  const parts = (result.content ?? []).map(toPart);
  const hasText = parts.some((part) => part.type === "text" && part.text !== "");
  if (!hasText && result.structuredContent !== undefined) {
    parts.unshift({ type: "text", text: JSON.stringify(result.structuredContent) });
  }
  const hasImage = parts.some((part) => part.type === "image");
  const content: ToolResultValue["content"] = hasImage
    ? parts
    : parts.map((part) => (part as TextPart).text).join("\n");
  const value: ToolResultValue = { content, isError: result.isError === true };
  if (result.structuredContent !== undefined) value.structured = result.structuredContent;
  return value;
}

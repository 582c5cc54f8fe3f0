/**
 * `agentloop chat` answers an MCP server's question (elicitation, form mode) inline: it prints the
 * server's message, then asks each field of the requested schema on its own line, checking the
 * type (integer, number, boolean, enum, string). `/decline` or `/cancel` refuses; the end of the
 * input cancels.
 */
import type { McpElicitation, McpElicitationAnswer } from "../mcp/index.js";
import type { palette } from "./render.js";

type Colors = ReturnType<typeof palette>;
type FieldSchema = { type?: string; title?: string; description?: string; enum?: unknown[]; items?: { enum?: unknown[] } };
type Parsed = { value: string | number | boolean | string[] } | { problem: string };

/** Reads a field's answer as its schema's type. */
export function parseFieldAnswer(schema: FieldSchema, text: string): Parsed {
  const choices = schema.enum ?? schema.items?.enum;
  if (schema.type === "array") {
    const picked = text.split(",").map((item) => item.trim()).filter((item) => item !== "");
    const unknown = picked.filter((item) => choices && !choices.includes(item));
    return unknown.length > 0 ? { problem: `not one of ${choices!.join(", ")}: ${unknown.join(", ")}` } : { value: picked };
  }
  if (choices) return choices.includes(text) ? { value: text } : { problem: `choose one of ${choices.join(", ")}` };
  if (schema.type === "integer" || schema.type === "number") {
    const number = Number(text);
    if (text === "" || !Number.isFinite(number)) return { problem: "a number is expected" };
    if (schema.type === "integer" && !Number.isInteger(number)) return { problem: "a whole number is expected" };
    return { value: number };
  }
  if (schema.type === "boolean") {
    if (/^(y|yes|true|1)$/i.test(text)) return { value: true };
    if (/^(n|no|false|0)$/i.test(text)) return { value: false };
    return { problem: "answer yes or no" };
  }
  return { value: text };
}

export async function askInline(
  request: McpElicitation,
  reader: AsyncIterator<string>,
  out: NodeJS.WritableStream,
  colors: Colors,
): Promise<McpElicitationAnswer> {
  const schema = request.requestedSchema as { properties?: Record<string, FieldSchema>; required?: string[] };
  const required = new Set(schema.required ?? []);
  out.write(`${colors.yellow(`? MCP server "${request.server}" asks: ${request.message}`)}\n${colors.dim("  (one answer per line; /decline or /cancel to refuse; empty skips an optional field)")}\n`);
  const content: Record<string, string | number | boolean | string[]> = {};
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const choices = field.enum ?? field.items?.enum;
    const hint = choices ? ` [${choices.join("/")}]` : field.type === "boolean" ? " [y/n]" : field.type ? ` (${field.type})` : "";
    for (;;) {
      out.write(`  ${field.title ?? name}${hint}${required.has(name) ? "" : colors.dim(" optional")}: `);
      const next = await reader.next();
      if (next.done) return { action: "cancel" };
      const text = next.value.trim();
      if (text === "/decline") return { action: "decline" };
      if (text === "/cancel") return { action: "cancel" };
      if (text === "" && !required.has(name)) break;
      const parsed = parseFieldAnswer(field, text);
      if ("value" in parsed) {
        content[name] = parsed.value;
        break;
      }
      out.write(`${colors.red(`  ${parsed.problem}`)}\n`);
    }
  }
  return { action: "accept", content };
}

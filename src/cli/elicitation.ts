/**
 * `agentloop chat` answers an MCP server's question (elicitation, form mode) inline: it prints the
 * server's message, then asks each field of the requested schema on its own line, checking the
 * type (integer, number, boolean, string), the choices (`enum`, titled `oneOf`/`anyOf`, picked by value
 * or title; several for a multi-select), the format (email, uri, date, date-time) and the bounds; a
 * wrong answer is asked again. An empty answer skips an optional field: the client fills in the
 * server's default, which the prompt shows. `/decline` or `/cancel` refuses; the end of the input cancels.
 */
import type { McpElicitation, McpElicitationAnswer } from "../mcp/index.js";
import type { palette } from "./render.js";

type Colors = ReturnType<typeof palette>;
type Choice = { const?: unknown; title?: string };
type FieldSchema = {
  type?: string;
  title?: string;
  description?: string;
  default?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  enum?: unknown[];
  /** Legacy titles of `enum` values. */
  enumNames?: string[];
  oneOf?: Choice[];
  anyOf?: Choice[];
  items?: { enum?: unknown[]; oneOf?: Choice[]; anyOf?: Choice[] };
};
type Parsed = { value: string | number | boolean | string[] } | { problem: string };

/** A field's choices with their titles: `enum` (+ `enumNames`), titled `oneOf`/`anyOf` consts, or the same under `items` (multi-select). */
export function choicesOf(schema: FieldSchema): Array<{ value: string; title: string }> | undefined {
  const from = (enumValues?: unknown[], names?: string[], titled?: Choice[]) => {
    if (enumValues) return enumValues.map((value, index) => ({ value: String(value), title: names?.[index] ?? String(value) }));
    if (titled?.every((choice) => choice.const !== undefined)) return titled.map((choice) => ({ value: String(choice.const), title: choice.title ?? String(choice.const) }));
    return undefined;
  };
  return schema.type === "array" && schema.items
    ? from(schema.items.enum, undefined, schema.items.oneOf ?? schema.items.anyOf)
    : from(schema.enum, schema.enumNames, schema.oneOf ?? schema.anyOf);
}

/** A typed value against the schema's format and bounds: the problem, or undefined. */
function problemOf(schema: FieldSchema, value: string | number | string[]): string | undefined {
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `at least ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `at most ${schema.maximum}`;
    return undefined;
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return `choose at least ${schema.minItems}`;
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return `choose at most ${schema.maxItems}`;
    return undefined;
  }
  if (schema.minLength !== undefined && value.length < schema.minLength) return `at least ${schema.minLength} characters`;
  if (schema.maxLength !== undefined && value.length > schema.maxLength) return `at most ${schema.maxLength} characters`;
  switch (schema.format) {
    case "email":
      return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) ? undefined : "not a valid email address";
    case "uri":
      return URL.canParse(value) ? undefined : "not a valid URI (for example https://example.com)";
    case "date":
      return /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value)) ? undefined : "not a valid date (YYYY-MM-DD)";
    case "date-time":
      return /^\d{4}-\d{2}-\d{2}T/.test(value) && !Number.isNaN(Date.parse(value)) ? undefined : "not a valid date and time (ISO 8601)";
    default:
      return undefined;
  }
}

/** Reads a field's answer as its schema's type (a choice by its value or its title), checked against its format and bounds. */
export function parseFieldAnswer(schema: FieldSchema, text: string): Parsed {
  const choices = choicesOf(schema);
  const pick = (answer: string) => choices?.find((choice) => choice.value === answer || choice.title.toLowerCase() === answer.toLowerCase())?.value;
  const checked = (value: string | number | string[]): Parsed => {
    const problem = problemOf(schema, value);
    return problem ? { problem } : { value };
  };
  if (schema.type === "array") {
    const picked = text.split(",").map((item) => item.trim()).filter((item) => item !== "");
    if (!choices) return checked(picked);
    const unknown = picked.filter((item) => pick(item) === undefined);
    return unknown.length > 0 ? { problem: `not one of ${choices.map((choice) => choice.title).join(", ")}: ${unknown.join(", ")}` } : checked(picked.map((item) => pick(item)!));
  }
  if (choices) {
    const value = pick(text);
    return value !== undefined ? { value } : { problem: `choose one of ${choices.map((choice) => choice.title).join(", ")}` };
  }
  if (schema.type === "integer" || schema.type === "number") {
    const number = Number(text);
    if (text === "" || !Number.isFinite(number)) return { problem: "a number is expected" };
    if (schema.type === "integer" && !Number.isInteger(number)) return { problem: "a whole number is expected" };
    return checked(number);
  }
  if (schema.type === "boolean") {
    if (/^(y|yes|true|1)$/i.test(text)) return { value: true };
    if (/^(n|no|false|0)$/i.test(text)) return { value: false };
    return { problem: "answer yes or no" };
  }
  return checked(text);
}

/** What the prompt shows after the field's title: its choices or type, and its default. */
function hintOf(field: FieldSchema): string {
  const choices = choicesOf(field);
  const shown = (value: unknown) => (Array.isArray(value) ? value.map((item) => choices?.find((choice) => choice.value === item)?.title ?? item).join(", ") : (choices?.find((choice) => choice.value === String(value))?.title ?? String(value)));
  const fallback = field.default !== undefined ? `default ${shown(field.default)}` : "";
  if (choices) return ` [${choices.map((choice) => choice.title).join("/")}]${field.type === "array" ? " (several, comma-separated)" : ""}${fallback ? ` (${fallback})` : ""}`;
  if (field.type === "boolean") return ` [y/n]${fallback ? ` (${fallback})` : ""}`;
  const kind = [field.format ?? field.type, fallback].filter(Boolean).join(", ");
  return kind ? ` (${kind})` : "";
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
    const hint = hintOf(field);
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

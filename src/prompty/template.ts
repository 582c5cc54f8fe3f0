import nunjucks from "nunjucks";
import { AgentLoopError } from "../errors.js";
import type { Message } from "../messages.js";
import type { JsonSchema } from "../model/model.js";
import type { PromptyAgent, PromptyProperty } from "./types.js";

// Prompts are not HTML: no autoescaping. Undefined variables render as empty strings.
const environment = new nunjucks.Environment(null, { autoescape: false, throwOnUndefined: false });

const where = (agent: PromptyAgent) => (agent.path ? `${agent.name} (${agent.path})` : agent.name);

/**
 * The inputs a prompt runs with: the given ones, then defaults. A required input that is
 * neither given nor defaulted is an error (kind `invalid_request`) naming it.
 */
export function resolveInputs(agent: PromptyAgent, inputs: Record<string, unknown> = {}): Record<string, unknown> {
  const resolved: Record<string, unknown> = { ...inputs };
  const missing: string[] = [];
  for (const input of agent.inputs) {
    if (resolved[input.name] !== undefined) continue;
    if (input.default !== undefined) resolved[input.name] = input.default;
    else if (input.required) missing.push(input.name);
  }
  if (missing.length > 0) {
    const names = missing.map((name) => `"${name}"`).join(", ");
    throw new AgentLoopError("invalid_request", `Missing required input${missing.length > 1 ? "s" : ""} ${names} for prompty ${where(agent)}`, {
      retryable: false,
    });
  }
  return resolved;
}

/** Renders the body with nunjucks (`{{ name }}`, `{% if %}`, `{% for %}`...). */
export function renderTemplate(agent: PromptyAgent, inputs: Record<string, unknown>): string {
  try {
    return environment.renderString(agent.template, inputs);
  } catch (error) {
    throw new AgentLoopError("configuration", `Cannot render the template of prompty ${where(agent)}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
      retryable: false,
    });
  }
}

const ROLE_MARKER = /^[ \t]*(system|user|assistant)[ \t]*:[ \t]*$/i;

/**
 * Splits rendered text into messages at lines that hold only a role marker (`system:`, `user:`,
 * `assistant:`). Text before the first marker is a system message; empty blocks are dropped.
 */
export function parseRoleMessages(text: string): Message[] {
  const messages: Message[] = [];
  let role: "system" | "user" | "assistant" = "system";
  let lines: string[] = [];
  const flush = () => {
    const content = lines.join("\n").trim();
    lines = [];
    if (!content) return;
    if (role === "assistant") messages.push({ role, content: [{ type: "text", text: content }] });
    else messages.push({ role, content });
  };
  for (const line of text.split("\n")) {
    const marker = ROLE_MARKER.exec(line);
    if (marker) {
      flush();
      role = marker[1].toLowerCase() as typeof role;
    } else {
      lines.push(line);
    }
  }
  flush();
  return messages;
}

/** The messages of a prompt for the given inputs (defaults applied, required ones checked). */
export function prepare(agent: PromptyAgent, inputs: Record<string, unknown> = {}): { messages: Message[]; inputs: Record<string, unknown> } {
  const resolved = resolveInputs(agent, inputs);
  return { messages: parseRoleMessages(renderTemplate(agent, resolved)), inputs: resolved };
}

const jsonTypes: Record<string, string> = {
  string: "string",
  str: "string",
  integer: "integer",
  int: "integer",
  number: "number",
  float: "number",
  boolean: "boolean",
  bool: "boolean",
  array: "array",
  list: "array",
  object: "object",
  dict: "object",
};

/** JSON Schema of an object whose properties are the given prompty properties. */
export function propertiesSchema(properties: PromptyProperty[]): JsonSchema {
  const schemaProperties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const property of properties) {
    const schema: JsonSchema = {};
    const type = jsonTypes[property.kind.toLowerCase()];
    if (type) schema.type = type;
    if (property.description) schema.description = property.description;
    if (property.default !== undefined) schema.default = property.default;
    schemaProperties[property.name] = schema;
    if (property.required && property.default === undefined) required.push(property.name);
  }
  return { type: "object", properties: schemaProperties, ...(required.length ? { required } : {}) };
}

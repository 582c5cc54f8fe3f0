/**
 * Structured output (`AgentConfig.output`): the final answer must be JSON matching a schema. A
 * model that supports it natively gets the schema as `request.responseFormat` (OpenAI
 * `json_schema`, Anthropic `output_config.format`); any other model (text tool-calling wrappers,
 * the scripted model, a custom one) gets it in a system message. Either way the answer is parsed
 * and validated; `result.output` holds the value.
 */
import type { Message } from "../messages.js";
import type { JsonSchema, Model, ModelRequest, ResponseFormat } from "../model/model.js";
import { isZodSchema, type ZodLikeSchema } from "../tools/tool.js";
import { validateValue } from "../tools/validate.js";

/** A zod schema (the result is typed from it) or a JSON Schema. */
export type OutputSchema<Output = unknown> =
  | { safeParse(value: unknown): { success: true; data: Output } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } }
  | JsonSchema;

/** The checked form of `AgentConfig.output`. */
export interface OutputContract {
  schema: JsonSchema | ZodLikeSchema;
  format: ResponseFormat;
  /** The system message for models without native structured output (one object per agent). */
  instruction: Message;
}

/** Reads `AgentConfig.output`; throws a TypeError naming the problem. */
export function outputContract(output: unknown, label = "Agent config: output"): OutputContract | undefined {
  if (output === undefined) return undefined;
  let json: JsonSchema;
  if (isZodSchema(output)) {
    const convert = (output as { toJSONSchema?: () => JsonSchema }).toJSONSchema;
    if (typeof convert !== "function") throw new TypeError(`${label}: only zod v4 schemas (with toJSONSchema) are supported`);
    json = convert.call(output);
  } else if (typeof output === "object" && output !== null && !Array.isArray(output)) {
    json = output as JsonSchema;
  } else {
    throw new TypeError(`${label} must be a zod schema or a JSON Schema object, got ${output === null ? "null" : typeof output}`);
  }
  const { $schema: _ignored, ...schema } = json;
  const title = typeof schema.title === "string" ? schema.title.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 64) : "";
  const format: ResponseFormat = { type: "json_schema", name: title || "output", schema, strict: isStrictSchema(schema) };
  const instruction: Message = {
    role: "system",
    content:
      "When you give your final answer (a turn without tool calls), answer with only a JSON value that matches this JSON Schema: no other text, no code fences.\n" +
      JSON.stringify(schema),
  };
  return { schema: isZodSchema(output) ? output : schema, format, instruction };
}

/**
 * Whether a schema meets OpenAI's strict rules (every object closed, every property required), so
 * it can be sent with `strict: true`; a schema that does not is sent non-strict, still validated here.
 */
export function isStrictSchema(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(isStrictSchema);
  if (typeof schema !== "object" || schema === null) return true;
  const record = schema as Record<string, unknown>;
  const properties = record.properties as Record<string, unknown> | undefined;
  const isObject = record.type === "object" || properties !== undefined;
  if (isObject) {
    if (record.additionalProperties !== false) return false;
    const required = new Set(Array.isArray(record.required) ? record.required : []);
    if (Object.keys(properties ?? {}).some((name) => !required.has(name))) return false;
  }
  for (const [key, value] of Object.entries(record)) {
    if (key === "enum" || key === "const" || key === "default" || key === "examples") continue;
    if (typeof value === "object" && value !== null && !isStrictSchema(value)) return false;
  }
  return true;
}

/** The request with the output format: native when the model supports it, else as instructions. */
export function withOutput(request: ModelRequest, contract: OutputContract | undefined, model: Model): ModelRequest {
  if (!contract) return request;
  if (model.supportsStructuredOutput) return { ...request, responseFormat: contract.format };
  // After the leading system messages, which stay as they are.
  const messages = request.messages;
  let at = 0;
  while (at < messages.length && messages[at]!.role === "system") at++;
  const moved = request.inputStart !== undefined && request.inputStart >= at ? { inputStart: request.inputStart + 1 } : {};
  return { ...request, ...moved, messages: [...messages.slice(0, at), contract.instruction, ...messages.slice(at)] };
}

export type ParsedAnswer = { ok: true; value: unknown } | { ok: false; error: string };

/** Parses and validates a final answer (a JSON code fence around it is tolerated). */
export async function parseAnswer(contract: OutputContract, text: string): Promise<ParsedAnswer> {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/.exec(text);
  const body = (fenced ? fenced[1]! : text).trim();
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return { ok: false, error: `the answer is not JSON (${(error as Error).message})` };
  }
  return validateValue(contract.schema, value);
}

/** The user message that asks once more, naming what failed. */
export function reaskMessage(error: string): Message {
  return {
    role: "user",
    content: `[agentloop] Your answer does not match the required output schema: ${error}. Answer again with only the corrected JSON value.`,
  };
}

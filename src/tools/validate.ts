import type { JsonSchema } from "../model/model.js";
import { isZodSchema, type Tool, type ZodLikeSchema } from "./tool.js";

export type Validation = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };
type Validator = (value: Record<string, unknown>) => Validation;

// ajv is loaded on the first validation, so importing the core stays cheap.
type Compiler = { compile(schema: object): ((data: unknown) => boolean) & { errors?: unknown } };
let ajvPromise: Promise<Compiler> | undefined;
const compiled = new WeakMap<object, Promise<Validator>>();

async function loadAjv(): Promise<Compiler> {
  ajvPromise ??= Promise.all([import("ajv"), import("ajv-formats")]).then(([{ Ajv }, formats]) => {
    const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false });
    // Formats (date, uri, email, …) are checked too, so a model's malformed date is fed back to it.
    const addFormats = ((formats.default as unknown as { default?: unknown }).default ?? formats.default) as (ajv: unknown) => void;
    addFormats(ajv);
    return ajv as unknown as Compiler;
  });
  return ajvPromise;
}

interface AjvError {
  instancePath: string;
  message?: string;
  keyword: string;
  params: Record<string, unknown>;
}

function describe(errors: AjvError[]): string {
  return errors
    .map((error) => {
      if (error.keyword === "required") return `missing required field "${String(error.params.missingProperty)}"`;
      if (error.keyword === "additionalProperties") return `unknown field "${String(error.params.additionalProperty)}"`;
      const field = error.instancePath ? error.instancePath.slice(1).replaceAll("/", ".") : "(arguments)";
      return `field "${field}" ${error.message ?? "is invalid"}`;
    })
    .join("; ");
}

/** Compiled validators by schema object, once compiled: the hot path reads them synchronously. */
const ready = new WeakMap<object, Validator>();

function schemaValidator(schema: JsonSchema): Promise<Validator> {
  let validator = compiled.get(schema);
  if (!validator) {
    validator = loadAjv().then((ajv) => {
      const { $schema: _ignored, ...rest } = schema;
      const check = ajv.compile(rest);
      const validate: Validator = (value) => (check(value) ? { ok: true, value } : { ok: false, error: describe((check.errors ?? []) as AjvError[]) });
      ready.set(schema, validate);
      return validate;
    });
    compiled.set(schema, validator);
  }
  return validator;
}

function zodValidation(schema: ZodLikeSchema, value: Record<string, unknown>): Validation {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data as Record<string, unknown> };
  const issues = result.error.issues.map((issue) => `field "${issue.path.map(String).join(".") || "(arguments)"}" ${issue.message}`);
  return { ok: false, error: issues.join("; ") };
}

/** Validates arguments against the tool's schema, naming each failing field. */
export async function validateArguments(tool: Tool<any>, value: Record<string, unknown>): Promise<Validation> {
  const schema = tool.parameters;
  if (isZodSchema(schema)) return zodValidation(schema, value);
  return (await schemaValidator(schema))(value);
}

/**
 * The same check without waiting: the validation, or `undefined` while the tool's JSON Schema is
 * still being compiled (then use {@link validateArguments}, or await {@link validatorReady}).
 */
export function validateArgumentsNow(tool: Tool<any>, value: Record<string, unknown>): Validation | undefined {
  const schema = tool.parameters;
  if (isZodSchema(schema)) return zodValidation(schema, value);
  return ready.get(schema)?.(value);
}

/** Resolves once the tool's validator is compiled; `undefined` when it already is (or needs none). */
export function validatorReady(tool: Tool<any>): Promise<unknown> | undefined {
  const schema = tool.parameters;
  // Not an object: nothing to compile; the validation itself reports the broken tool.
  if (typeof schema !== "object" || schema === null || isZodSchema(schema) || ready.has(schema)) return undefined;
  return schemaValidator(schema).catch(() => undefined);
}

/** The JSON Schema the model sees for a tool (zod schemas converted, `$schema` dropped). */
export function jsonSchemaOf(tool: Tool<any>): JsonSchema {
  const schema = tool.parameters as unknown;
  if (isZodSchema(schema)) {
    const convert = (schema as { toJSONSchema?: () => JsonSchema }).toJSONSchema;
    if (typeof convert !== "function") throw new TypeError(`tool "${tool.name}": only zod v4 schemas (with toJSONSchema) are supported`);
    const { $schema: _ignored, ...rest } = convert.call(schema);
    return rest;
  }
  return (schema as JsonSchema | undefined) ?? { type: "object", properties: {} };
}

/**
 * The background warm-up starts this long after an agent is built, on a timer that does not keep
 * the process alive: a short-lived process that never validates (`agentloop run "hi"` answered
 * without tools, `--help`) does not load ajv, while a server or a run waiting on a real model has
 * its validators ready long before the first wave. A wave that comes first compiles on demand.
 */
const WARM_DELAY_MS = 50;
const toWarm = new Set<JsonSchema>();
let warmTimer: ReturnType<typeof setTimeout> | undefined;

/** Compiles the validators of JSON-Schema tools in the background, so the first wave does not wait for it. */
export function warmValidators(tools: Iterable<Tool<any>>): void {
  for (const tool of tools) {
    if (!isZodSchema(tool.parameters) && tool.parameters) toWarm.add(tool.parameters as JsonSchema);
  }
  if (toWarm.size === 0 || warmTimer) return;
  warmTimer = setTimeout(() => {
    warmTimer = undefined;
    for (const schema of toWarm) schemaValidator(schema).catch(() => undefined);
    toWarm.clear();
  }, WARM_DELAY_MS);
  warmTimer.unref?.();
}

/**
 * Validates any value (not only an arguments object) against a JSON Schema or a zod schema, naming
 * each failing field; the zod schema's parsed data is the value returned.
 */
export async function validateValue(schema: JsonSchema | ZodLikeSchema, value: unknown): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {
  if (isZodSchema(schema)) {
    const result = schema.safeParse(value);
    if (result.success) return { ok: true, value: result.data };
    return { ok: false, error: result.error.issues.map((issue) => `field "${issue.path.map(String).join(".") || "(answer)"}" ${issue.message}`).join("; ") };
  }
  const validate = await schemaValidator(schema);
  const result = validate(value as Record<string, unknown>);
  return result.ok ? { ok: true, value } : { ok: false, error: result.error.replaceAll('"(arguments)"', '"(answer)"').replaceAll("(arguments)", "(answer)") };
}

/** Why a JSON Schema cannot be used (ajv refuses to compile it), or undefined when it can. */
export async function schemaProblem(schema: JsonSchema): Promise<string | undefined> {
  try {
    await schemaValidator(schema);
    return undefined;
  } catch (error) {
    compiled.delete(schema);
    return error instanceof Error ? error.message : String(error);
  }
}

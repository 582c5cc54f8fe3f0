import type { JsonSchema } from "../model/model.js";
import { isZodSchema, type Tool, type ZodLikeSchema } from "./tool.js";

export type Validation = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };
type Validator = (value: Record<string, unknown>) => Validation;

// ajv is loaded on the first validation, so importing the core stays cheap.
type Compiler = { compile(schema: object): ((data: unknown) => boolean) & { errors?: unknown }; removeSchema(schema: object): unknown };
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

/**
 * Compiled validators by the schema's JSON text, so equal schemas in different objects (a tool built
 * per request or per agent, the same client tool sent with every chat request, an MCP server's tools
 * listed again) compile once: a compile costs ajv milliseconds of CPU, a lookup microseconds. Bounded:
 * past `validatorCache.limit` schemas (500) the oldest is dropped, from ajv's own cache too (which
 * otherwise keeps every schema it compiled for as long as the process lives). Internal: the limit is
 * settable for the tests, which would otherwise compile 500 schemas to reach it.
 */
export const validatorCache = { limit: 500 };
const byText = new Map<string, { schema: object; validator: Promise<Validator>; ready?: Validator }>();

/** The schema's JSON text, or undefined when it has none (a cycle, a BigInt): then it compiles by object only. */
function textOf(schema: object): string | undefined {
  try {
    return JSON.stringify(schema);
  } catch {
    return undefined;
  }
}

function schemaValidator(schema: JsonSchema): Promise<Validator> {
  let validator = compiled.get(schema);
  if (validator) return validator;
  const { $schema: _ignored, ...rest } = schema;
  const text = textOf(rest);
  const known = text === undefined ? undefined : byText.get(text);
  if (known) {
    validator = known.validator;
    if (known.ready) ready.set(schema, known.ready);
    else validator.then((validate) => ready.set(schema, validate), () => undefined);
  } else {
    const entry: { schema: object; validator: Promise<Validator>; ready?: Validator } = { schema: rest, validator: undefined as unknown as Promise<Validator> };
    validator = entry.validator = loadAjv().then((ajv) => {
      const check = ajv.compile(rest);
      const validate: Validator = (value) => (check(value) ? { ok: true, value } : { ok: false, error: describe((check.errors ?? []) as AjvError[]) });
      entry.ready = validate;
      ready.set(schema, validate);
      return validate;
    });
    if (text !== undefined) {
      byText.set(text, entry);
      // A schema ajv refuses is not kept: the next tool with it gets the same error, compiled again.
      validator.catch(() => byText.get(text) === entry && byText.delete(text));
      while (byText.size > validatorCache.limit) {
        const [oldestText, oldest] = byText.entries().next().value as [string, { schema: object }];
        byText.delete(oldestText);
        void ajvPromise?.then((ajv) => ajv.removeSchema(oldest.schema)).catch(() => undefined);
      }
    }
  }
  compiled.set(schema, validator);
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
  const validate = ready.get(schema);
  if (validate || typeof schema !== "object" || schema === null) return validate?.(value);
  // A new schema object: ready at once when an equal schema is compiled (else its compile starts).
  schemaValidator(schema).catch(() => undefined);
  return ready.get(schema)?.(value);
}

/** Resolves once the tool's validator is compiled; `undefined` when it already is (or needs none). */
export function validatorReady(tool: Tool<any>): Promise<unknown> | undefined {
  const schema = tool.parameters;
  // Not an object: nothing to compile; the validation itself reports the broken tool.
  if (typeof schema !== "object" || schema === null || isZodSchema(schema) || ready.has(schema)) return undefined;
  const validator = schemaValidator(schema).catch(() => undefined);
  // An equal schema already compiled (another tool's): ready now.
  return ready.has(schema) ? undefined : validator;
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

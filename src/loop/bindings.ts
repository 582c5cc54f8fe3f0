import type { JsonSchema } from "../model/model.js";

/** Removes bound parameters from the schema the model sees (properties and `required`). */
export function hideBoundParameters(schema: JsonSchema, bindings: Record<string, string> | undefined): JsonSchema {
  if (!bindings || Object.keys(bindings).length === 0) return schema;
  const bound = new Set(Object.keys(bindings));
  const properties = { ...((schema.properties as Record<string, unknown> | undefined) ?? {}) };
  for (const name of bound) delete properties[name];
  const result: JsonSchema = { ...schema, properties };
  if (Array.isArray(schema.required)) result.required = (schema.required as string[]).filter((name) => !bound.has(name));
  return result;
}

/** Injects bound inputs into the arguments; a bound value always overrides what the model sent. */
export function applyBindings(
  args: Record<string, unknown>,
  bindings: Record<string, string> | undefined,
  inputs: Record<string, unknown>,
): Record<string, unknown> {
  if (!bindings) return args;
  const result = { ...args };
  for (const [parameter, input] of Object.entries(bindings)) if (input in inputs) result[parameter] = inputs[input];
  return result;
}

import { readFile } from "node:fs/promises";
import { basename, extname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { AgentLoopError } from "../errors.js";
import type { PromptyAgent, PromptyModel, PromptyProperty, PromptyToolSpec } from "./types.js";

export interface LoadPromptyOptions {
  /** Where `${env:VAR}` references are looked up (default `process.env`). */
  env?: Record<string, string | undefined>;
}

const configurationError = (message: string, cause?: unknown) => new AgentLoopError("configuration", message, { cause, retryable: false });

const ENV_REFERENCE = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}/g;

/**
 * Replaces `${env:VAR}` and `${env:VAR:default}` in every string of the frontmatter. A variable
 * that is not set and has no default is an error naming the variable, the field and the file.
 */
export function resolveEnvReferences(value: unknown, env: Record<string, string | undefined>, where: string, field = ""): unknown {
  if (typeof value === "string") {
    return value.replace(ENV_REFERENCE, (_match, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (found !== undefined) return found;
      if (fallback !== undefined) return fallback;
      throw configurationError(`Environment variable ${name} is not set (referenced by ${field || "the frontmatter"} in ${where}); set it or write \${env:${name}:default}`);
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => resolveEnvReferences(item, env, where, `${field}[${index}]`));
  if (value && typeof value === "object") {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) result[key] = resolveEnvReferences(item, env, where, field ? `${field}.${key}` : key);
    return result;
  }
  return value;
}

/** Splits `---\nyaml\n---\nbody`; a file without frontmatter is all body. */
function splitFrontmatter(text: string): { yaml: string; body: string } {
  const normalized = text.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const match = /^---[ \t]*\n([\s\S]*?)\n?---[ \t]*(?:\n|$)/.exec(normalized);
  if (!match) return { yaml: "", body: normalized };
  return { yaml: match[1], body: normalized.slice(match[0].length) };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A list of `{name, ...}` or a map `name → {...}` (or `name → shorthand`) as a list of entries. */
function namedEntries(value: unknown, section: string, where: string, shorthand: string): Array<Record<string, unknown>> {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) {
    return value.map((item, index) => {
      if (!isRecord(item)) throw configurationError(`${section}[${index}] in ${where} must be a mapping with a name`);
      return item;
    });
  }
  if (isRecord(value)) {
    return Object.entries(value).map(([name, item]) => (isRecord(item) ? { name, ...item } : { name, [shorthand]: item }));
  }
  throw configurationError(`${section} in ${where} must be a list or a mapping`);
}

function toProperty(entry: Record<string, unknown>, section: string, where: string): PromptyProperty {
  const name = entry.name;
  if (typeof name !== "string" || name === "") throw configurationError(`every entry of ${section} in ${where} needs a name`);
  const property: PromptyProperty = {
    name,
    kind: typeof entry.kind === "string" ? entry.kind : typeof entry.type === "string" ? entry.type : "string",
    required: entry.required === true,
  };
  if (typeof entry.description === "string") property.description = entry.description;
  if ("default" in entry) property.default = entry.default;
  return property;
}

function toBindings(value: unknown, toolName: string, where: string): Record<string, string> {
  const bindings: Record<string, string> = {};
  for (const entry of namedEntries(value, `tools.${toolName}.bindings`, where, "input")) {
    const input = entry.input;
    if (typeof entry.name !== "string" || typeof input !== "string" || input === "") {
      throw configurationError(`binding ${JSON.stringify(entry.name)} of tool "${toolName}" in ${where} needs an input name`);
    }
    bindings[entry.name] = input;
  }
  return bindings;
}

function toTool(entry: Record<string, unknown>, where: string): PromptyToolSpec {
  const name = entry.name;
  if (typeof name !== "string" || name === "") throw configurationError(`every tool in ${where} needs a name`);
  const kind = entry.kind;
  if (typeof kind !== "string" || kind === "") {
    throw configurationError(`tool "${name}" in ${where} needs a kind (function, prompty, mcp or a registered custom kind)`);
  }
  const tool: PromptyToolSpec = {
    name,
    kind,
    bindings: toBindings(entry.bindings, name, where),
    parameters: namedEntries(entry.parameters, `tools.${name}.parameters`, where, "kind").map((item) => toProperty(item, `tools.${name}.parameters`, where)),
    raw: entry,
  };
  if (typeof entry.description === "string") tool.description = entry.description;
  if (kind === "prompty") {
    if (typeof entry.path !== "string" || entry.path === "") throw configurationError(`prompty tool "${name}" in ${where} needs a path to its .prompty file`);
    tool.path = entry.path;
    const mode = entry.mode ?? "single";
    if (mode !== "single" && mode !== "agentic") {
      throw configurationError(`prompty tool "${name}" in ${where}: mode must be "single" or "agentic", got ${JSON.stringify(mode)}`);
    }
    tool.mode = mode;
  }
  return tool;
}

function toModel(value: unknown, where: string): PromptyModel {
  if (value === undefined || value === null) return {};
  if (typeof value === "string") return { id: value };
  if (!isRecord(value)) throw configurationError(`model in ${where} must be a mapping or a model name`);
  const model: PromptyModel = {};
  if (typeof value.id === "string") model.id = value.id;
  if (typeof value.provider === "string") model.provider = value.provider;
  if (typeof value.apiType === "string") model.apiType = value.apiType;
  if (isRecord(value.connection)) model.connection = value.connection;
  if (isRecord(value.options)) model.options = value.options;
  if (value.fallback !== undefined) {
    const list = typeof value.fallback === "string" ? [value.fallback] : value.fallback;
    if (!Array.isArray(list) || list.length === 0 || !list.every((spec) => typeof spec === "string" && spec.includes(":"))) {
      throw configurationError(`model.fallback in ${where} must be a model spec or a list of them, like ["openai:gpt-4.1"], got ${JSON.stringify(value.fallback)}`);
    }
    model.fallback = list as string[];
  }
  return model;
}

/**
 * Parses the text of a `.prompty` file: YAML frontmatter (name, description, model, inputs,
 * tools) and the markdown body kept as the template. `path` names the file in errors and is
 * where child prompty tools are resolved from.
 */
export function parsePrompty(text: string, path?: string, options: LoadPromptyOptions = {}): PromptyAgent {
  const where = path ?? "the prompty text";
  const { yaml, body } = splitFrontmatter(text);
  let parsed: unknown;
  try {
    parsed = yaml.trim() ? parseYaml(yaml) : {};
  } catch (error) {
    throw configurationError(`Invalid YAML frontmatter in ${where}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  if (parsed === null || parsed === undefined) parsed = {};
  if (!isRecord(parsed)) throw configurationError(`The frontmatter of ${where} must be a YAML mapping`);
  const frontmatter = resolveEnvReferences(parsed, options.env ?? process.env, where) as Record<string, unknown>;
  const fallbackName = path ? basename(path, extname(path)) : "prompty";
  const agent: PromptyAgent = {
    name: typeof frontmatter.name === "string" && frontmatter.name ? frontmatter.name : fallbackName,
    model: toModel(frontmatter.model, where),
    inputs: namedEntries(frontmatter.inputs, "inputs", where, "kind").map((entry) => toProperty(entry, "inputs", where)),
    tools: namedEntries(frontmatter.tools, "tools", where, "kind").map((entry) => toTool(entry, where)),
    template: body,
    frontmatter,
  };
  if (typeof frontmatter.description === "string") agent.description = frontmatter.description;
  if (path) agent.path = resolve(path);
  const maxIterations = frontmatter.maxIterations;
  if (maxIterations !== undefined) {
    if (typeof maxIterations !== "number" || !Number.isInteger(maxIterations) || maxIterations < 1) {
      throw configurationError(`maxIterations in ${where} must be a positive integer, got ${JSON.stringify(maxIterations)}`);
    }
    agent.maxIterations = maxIterations;
  }
  const stream = frontmatter.stream ?? agent.model.options?.stream;
  if (stream !== undefined) {
    if (typeof stream !== "boolean") throw configurationError(`stream in ${where} must be true or false, got ${JSON.stringify(stream)}`);
    agent.stream = stream;
  }
  const budget = frontmatter.contextBudget ?? frontmatter.context_budget;
  if (budget !== undefined) {
    if (typeof budget !== "number" || !Number.isInteger(budget) || budget < 1) {
      throw configurationError(`contextBudget in ${where} must be a positive integer (characters), got ${JSON.stringify(budget)}`);
    }
    agent.contextBudget = budget;
  }
  if (frontmatter.guardrails !== undefined) agent.guardrails = frontmatter.guardrails;
  if (frontmatter.outputs !== undefined) agent.outputs = namedEntries(frontmatter.outputs, "outputs", where, "kind").map((entry) => toProperty(entry, "outputs", where));
  return agent;
}

/** Loads a `.prompty` file. A missing file is an error (kind `not_found`) naming the path. */
export async function loadPrompty(path: string, options: LoadPromptyOptions = {}): Promise<PromptyAgent> {
  if (typeof path !== "string" || path === "") throw new TypeError("loadPrompty: a file path is required");
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new AgentLoopError("not_found", `Prompty file not found: ${absolute}`, { cause: error, retryable: false });
    throw configurationError(`Cannot read prompty file ${absolute}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  return parsePrompty(text, absolute, options);
}

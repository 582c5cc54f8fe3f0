/**
 * Guardrails: functions (or declarative rules) that may stop an input before any model call, an
 * answer before it reaches the caller, and a tool call before its wave starts.
 */
import type { Message } from "../messages.js";

export type GuardrailVerdict = { allow: true } | { allow: false; reason: string };
/** A tool guardrail may also rewrite the arguments (validated against the tool's schema again). */
export type ToolGuardrailVerdict = GuardrailVerdict | { allow: true; arguments: Record<string, unknown> };

export interface InputGuardrailContext {
  /** The user's input for this turn of the conversation. */
  input: string;
  messages: readonly Message[];
  agent: string;
  runId: string;
}

export interface OutputGuardrailContext {
  /** The final answer the model gave. */
  text: string;
  messages: readonly Message[];
  agent: string;
  runId: string;
}

export interface ToolGuardrailContext {
  toolName: string;
  toolCallId: string;
  /** The parsed, bound and validated arguments. */
  arguments: Record<string, unknown>;
  agent: string;
  runId: string;
  inputs: Record<string, unknown>;
}

/** Denied tools in data form (agent file, `.prompty` frontmatter): names or globs (`*`, `?`). */
export interface ToolDenyRule {
  /** A tool name or glob, or several. */
  tools: string | string[];
  reason: string;
}

export interface Guardrails {
  input?: (context: InputGuardrailContext) => GuardrailVerdict | Promise<GuardrailVerdict>;
  output?: (context: OutputGuardrailContext) => GuardrailVerdict | Promise<GuardrailVerdict>;
  tool?: (context: ToolGuardrailContext) => ToolGuardrailVerdict | Promise<ToolGuardrailVerdict>;
  /** Declarative tool rules, checked before `tool`: a matching call is denied with the rule's reason. */
  deniedTools?: ToolDenyRule[];
}

function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${body}$`);
}

/** Throws a TypeError naming the problem (checked when the agent is built). */
export function checkGuardrails(guardrails: unknown): void {
  if (guardrails === undefined) return;
  if (!guardrails || typeof guardrails !== "object") throw new TypeError("Agent config: guardrails must be an object { input?, output?, tool?, deniedTools? }");
  const value = guardrails as Record<string, unknown>;
  for (const key of Object.keys(value)) {
    if (!["input", "output", "tool", "deniedTools"].includes(key)) {
      throw new TypeError(`Agent config: guardrails.${key} is not a guardrail (expected input, output, tool or deniedTools)`);
    }
    if (key !== "deniedTools" && value[key] !== undefined && typeof value[key] !== "function") {
      throw new TypeError(`Agent config: guardrails.${key} must be a function returning { allow: true } or { allow: false, reason }`);
    }
  }
  if (value.deniedTools !== undefined) {
    if (!Array.isArray(value.deniedTools)) throw new TypeError("Agent config: guardrails.deniedTools must be a list of { tools, reason }");
    for (const rule of value.deniedTools as unknown[]) {
      const entry = rule as ToolDenyRule;
      const tools = typeof entry?.tools === "string" ? [entry.tools] : entry?.tools;
      if (!Array.isArray(tools) || tools.length === 0 || !tools.every((name) => typeof name === "string" && name !== "") || typeof entry.reason !== "string" || !entry.reason) {
        throw new TypeError(`Agent config: each guardrails.deniedTools entry needs tools (a name or glob, or a list) and a reason, got ${JSON.stringify(rule)}`);
      }
    }
  }
}

/** Whether one of a tool's names (see `toolNames`) matches one of the names or globs (`*`, `?`). */
export function matchesAny(globs: readonly string[] | undefined, names: readonly string[]): boolean {
  return globs?.some((glob) => names.some((name) => globToRegExp(glob).test(name))) === true;
}

/** The reason a declarative rule denies a tool (by one of its names), if one does. */
export function deniedByRule(rules: readonly ToolDenyRule[] | undefined, names: readonly string[]): string | undefined {
  if (!rules) return undefined;
  for (const rule of rules) {
    if (matchesAny(typeof rule.tools === "string" ? [rule.tools] : rule.tools, names)) return rule.reason;
  }
  return undefined;
}

/**
 * Runs one guardrail. A guardrail that throws, or answers something that is not a verdict (`{}`,
 * `{ allow: "false" }`, null, a string, a tool guardrail's `arguments` that are not an object),
 * denies (fail closed): the reason names what it returned.
 */
export async function evaluate<V extends GuardrailVerdict | ToolGuardrailVerdict>(
  which: "input" | "output" | "tool",
  guardrail: (context: any) => V | Promise<V>,
  context: unknown,
): Promise<V | { allow: false; reason: string }> {
  let verdict: unknown;
  try {
    verdict = await guardrail(context);
  } catch (error) {
    return { allow: false, reason: `the ${which} guardrail failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  const value = verdict as { allow?: unknown; reason?: unknown; arguments?: unknown } | null;
  if (value && typeof value === "object" && value.allow === true) {
    const args = value.arguments;
    if (!("arguments" in value) || (which === "tool" && args !== null && typeof args === "object" && !Array.isArray(args))) return verdict as V;
    const expected = which === "tool" ? "{ allow: true, arguments: { … } } with an object of arguments" : "{ allow: true } without arguments";
    return { allow: false, reason: `the ${which} guardrail returned a malformed verdict ${describe(verdict)}, not ${expected}` };
  }
  if (value && typeof value === "object" && value.allow === false) {
    const reason = value.reason;
    return { allow: false, reason: typeof reason === "string" && reason ? reason : `denied by the ${which} guardrail` };
  }
  return { allow: false, reason: `the ${which} guardrail returned a malformed verdict ${describe(verdict)}, not { allow: true } or { allow: false, reason }` };
}

/** A verdict as text for an error message, whatever it is (undefined, circular, a BigInt, a function). */
function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "function") return "a function";
  try {
    const text = JSON.stringify(value, (_key, item) => (typeof item === "bigint" ? `${item}n` : item));
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}

type Delta = { type: "text-delta" | "commentary-delta" | "reasoning-delta"; delta: string };

/**
 * Holds a turn's answer text while an output guardrail is set: nothing reaches the caller as answer
 * text until the turn is known to be an answer and the guardrail allowed it. Reasoning passes at once.
 */
export class AnswerBuffer {
  private held: string[] = [];

  constructor(private readonly emit: (type: Delta["type"], delta: string) => void) {}

  forward = (delta: string, type: Delta["type"]): void => {
    if (type === "text-delta") this.held.push(delta);
    else this.emit(type, delta);
  };

  /** The turn called tools: its text was commentary after all. */
  releaseAsCommentary(): void {
    for (const delta of this.held) this.emit("commentary-delta", delta);
    this.held = [];
  }

  /** The answer was allowed: its deltas go out as they came. */
  release(): void {
    for (const delta of this.held) this.emit("text-delta", delta);
    this.held = [];
  }

  drop(): void {
    this.held = [];
  }
}

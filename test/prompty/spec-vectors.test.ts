// The Prompty specification's agent-loop vectors (§9, §13), every one, run against invokeAgent.
// Each vector scripts the model's responses (real Chat Completions bodies, served by a real
// OpenAI-compatible server on 127.0.0.1 to the real OpenAI adapter), names the tools and what
// they return, and says what the loop must do: the answer or the error, the model calls, the
// messages, and the exact sequence of Prompty events.
//
// The vectors are copied from microsoft/prompty (fixtures/spec-vectors/README.md). Where they
// contradict themselves, the reading is written here, at the check:
// - `total_messages` and `messages_updated.message_count` count one message more than the
//   vectors list once a tool has run (single_tool_call lists 5 messages in `message_sequence`
//   and says `total_messages: 6`): checked as our count of messages plus that one (the rule is
//   itself checked against every vector that gives both).
// - a summary of trimmed messages is compared by its role, its prefix and `summary_contains`
//   (the vectors write a paraphrase no deterministic summary can produce).
// - events without payloads ("Events verify type sequence only (payloads vary by runtime)")
//   are compared by type, leaving out `status` events, whose payload is all they say.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { GuardrailVerdict, Guardrails } from "../../src/loop/guardrails.js";
import type { Message } from "../../src/messages.js";
import { invokeAgent, type PromptyEventType, PromptyRunError, parsePrompty, Steering } from "../../src/prompty/index.js";
import type { ToolContext } from "../../src/tools/tool.js";

// ---------------------------------------------------------------------------------------------
// The vectors: the JSON array inside agent.tsp's TypeSpec triple-quoted string.

interface ChatCompletion {
  choices: Array<{ message: { content: string | null; tool_calls: Array<{ id: string; function: { name: string; arguments: string } }> | null } }>;
}
interface Step {
  turn: number;
  llm_response: ChatCompletion;
  expected_tool_calls: Array<{ id: string; name: string; arguments: unknown }> | null;
  tool_results?: Array<{ tool_call_id: string; result: string }>;
  expected_execution_args?: Record<string, unknown>;
}
interface VectorEvent {
  type: PromptyEventType;
  data?: Record<string, unknown>;
}
interface Vector {
  name: string;
  description: string;
  stage: string;
  input: {
    messages: Array<{ role: string; content: string }>;
    tools?: Array<Record<string, unknown> & { name: string }>;
    tool_functions: Record<string, string>;
    parent_inputs?: Record<string, unknown>;
    cancel?: { cancelled_at: string };
    on_event?: boolean;
    context_budget?: number;
    guardrails?: {
      input?: { action: string; reason?: string };
      output?: { action: string; reason?: string };
      tool?: { deny_tools: string[]; reason?: string };
    };
    steering?: { messages: Array<{ inject_before_iteration: number; role: string; text: string }> };
    parallel_tool_calls?: boolean;
  };
  sequence: Step[];
  expected: Record<string, any>;
}

function loadVectors(): Vector[] {
  const source = readFileSync(new URL("fixtures/spec-vectors/agent.tsp", import.meta.url), "utf8");
  const text = source.slice(source.indexOf('"""') + 3, source.lastIndexOf('"""'));
  // TypeSpec string escapes (the file has only \\ and \").
  return JSON.parse(text.replace(/\\(.)/g, "$1")) as Vector[];
}

const vectors = loadVectors();

// Every field of `expected` the runner reads; an unknown one fails the vector instead of being skipped.
const EXPECTED_FIELDS = new Set([
  "result",
  "error",
  "error_type",
  "error_reason",
  "iterations",
  "total_messages",
  "message_sequence",
  "assistant_tool_calls_message",
  "tool_result_message",
  "trimmed_messages",
  "summary_contains",
  "denied_tools",
  "tool_execution_order",
  "tools_executed",
  "events",
  "notes", // prose
  "rust_expected_error", // the Rust engine's own refusal of parallel_tool_calls
]);

// Every field of `input` and of a step the runner reads.
const INPUT_FIELDS = new Set(["messages", "tools", "tool_functions", "parent_inputs", "cancel", "on_event", "context_budget", "guardrails", "steering", "parallel_tool_calls"]);
const STEP_FIELDS = new Set(["turn", "llm_response", "expected_tool_calls", "tool_results", "expected_execution_args"]);

// ---------------------------------------------------------------------------------------------
// The model: a Chat Completions server on 127.0.0.1 answering with the vector's responses in order.

let server: Server;
let baseURL = "";
let script: { responses: ChatCompletion[]; requests: Array<{ messages: Array<{ role: string; content: unknown }> }>; onRequest?: (index: number) => void } = {
  responses: [],
  requests: [],
};

before(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const index = script.requests.length;
      script.requests.push(body);
      script.onRequest?.(index);
      const answer = script.responses[index];
      response.writeHead(answer ? 200 : 500, { "content-type": "application/json" });
      response.end(JSON.stringify(answer ?? { error: { message: `the vector scripts ${script.responses.length} responses, this is request ${index + 1}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

// ---------------------------------------------------------------------------------------------
// One run of a vector.

interface Observed {
  result?: Awaited<ReturnType<typeof invokeAgent>>;
  error?: unknown;
  messages: Message[];
  events: Array<{ type: PromptyEventType; data: any }>;
  executions: Array<{ name: string; id: string; args: Record<string, unknown> }>;
  requests: typeof script.requests;
}

/** The prompty a vector describes: its messages as role blocks, its tools, a model on the local server. */
function promptyOf(vector: Vector) {
  const frontmatter = {
    name: `vector_${vector.name}`,
    model: { id: "gpt-4", provider: "openai", connection: { endpoint: baseURL, apiKey: "test-key" } },
    stream: false,
    ...(vector.input.parent_inputs ? { inputs: Object.keys(vector.input.parent_inputs).map((name) => ({ name, kind: "string" })) } : {}),
    tools: vector.input.tools ?? [],
  };
  const body = vector.input.messages.map((message) => `${message.role}:\n${message.content}`).join("\n\n");
  // JSON is YAML: the frontmatter needs no YAML writer.
  return parsePrompty(`---\n${JSON.stringify(frontmatter)}\n---\n${body}\n`, `${vector.name}.prompty`);
}

/** An error class named as the vector names it (`raises RuntimeError`). */
function namedError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** The vector's tool functions: each returns the result the vector scripts for the call, or raises. */
function toolFunctions(vector: Vector, executions: Observed["executions"]) {
  const scripted = new Map(vector.sequence.flatMap((step) => step.tool_results ?? []).map((entry) => [entry.tool_call_id, entry.result]));
  const handlers: Record<string, (args: Record<string, unknown>, context: ToolContext) => Promise<string>> = {};
  for (const [name, behaviour] of Object.entries(vector.input.tool_functions)) {
    handlers[name] = async (args, context) => {
      executions.push({ name, id: context.toolCallId, args });
      const result = scripted.get(context.toolCallId);
      assert.ok(result !== undefined, `${vector.name}: no scripted result for ${name} (${context.toolCallId})`);
      const raises = /^raises (\w+)$/.exec(behaviour);
      if (raises) {
        // The vector records the exception's message only in the result it expects for it.
        const recorded = new RegExp(`^Error calling '${name}': ${raises[1]}: (.*)$`).exec(result);
        assert.ok(recorded, `${vector.name}: the expected result ${JSON.stringify(result)} does not record the ${raises[1]}`);
        throw namedError(raises[1]!, recorded[1]!);
      }
      return result;
    };
  }
  return handlers;
}

function guardrailsOf(vector: Vector): Guardrails | undefined {
  const given = vector.input.guardrails;
  if (!given) return undefined;
  const verdict = (rule: { action: string; reason?: string }): GuardrailVerdict => (rule.action === "deny" ? { allow: false, reason: rule.reason ?? "denied" } : { allow: true });
  const guardrails: Guardrails = {};
  if (given.input) guardrails.input = () => verdict(given.input!);
  if (given.output) guardrails.output = () => verdict(given.output!);
  if (given.tool) {
    const { deny_tools: denied, reason = "denied" } = given.tool;
    guardrails.tool = ({ toolName }) => (denied.includes(toolName) ? { allow: false, reason } : { allow: true });
  }
  return guardrails;
}

/**
 * Where a vector cancels: `before_iteration` (before the run), `before_iteration_N` (once the
 * tools of iteration N - 1 have all returned), `after_tool_K` (once tool call K returned).
 * The reason is the one the vector's `cancelled` event carries.
 */
function cancelPoint(vector: Vector): { afterResults: number; reason: string } | undefined {
  const at = vector.input.cancel?.cancelled_at;
  if (at === undefined) return undefined;
  if (at === "before_iteration") return { afterResults: 0, reason: "Cancellation requested before first iteration" };
  const iteration = /^before_iteration_(\d+)$/.exec(at);
  if (iteration) {
    const results = vector.sequence.slice(0, Number(iteration[1]) - 1).reduce((sum, step) => sum + (step.tool_results?.length ?? 0), 0);
    return { afterResults: results, reason: `Cancellation requested before iteration ${iteration[1]}` };
  }
  const tool = /^after_tool_(\d+)$/.exec(at);
  if (tool) return { afterResults: Number(tool[1]) + 1, reason: "Cancellation requested after tool execution" };
  throw new Error(`${vector.name}: unknown cancellation point ${at}`);
}

async function run(vector: Vector): Promise<Observed> {
  const executions: Observed["executions"] = [];
  const events: Observed["events"] = [];
  const steering = vector.input.steering ? new Steering() : undefined;
  script = {
    responses: vector.sequence.map((step) => step.llm_response),
    requests: [],
    // A steering message for iteration N is sent while iteration N - 1 runs.
    onRequest: (index) => {
      for (const message of vector.input.steering?.messages ?? []) if (message.inject_before_iteration === index + 2) steering!.send(message.text);
    },
  };
  const controller = new AbortController();
  const cancel = cancelPoint(vector);
  if (cancel?.afterResults === 0) controller.abort(cancel.reason);
  let results = 0;
  const onEvent = <T extends PromptyEventType>(type: T, data: unknown) => {
    events.push({ type, data });
    if (type === "tool_result" && cancel && ++results === cancel.afterResults) controller.abort(cancel.reason);
  };
  const observed: Observed = { messages: [], events, executions, requests: script.requests };
  try {
    observed.result = await invokeAgent(promptyOf(vector), vector.input.parent_inputs ?? {}, toolFunctions(vector, executions), {
      onEvent,
      ...(cancel ? { signal: controller.signal } : {}),
      ...(steering ? { steering } : {}),
      ...(vector.input.parallel_tool_calls ? { parallelToolCalls: true } : {}),
      ...(vector.input.context_budget ? { contextBudget: vector.input.context_budget } : {}),
      ...(vector.input.guardrails ? { guardrails: guardrailsOf(vector) } : {}),
    });
    observed.messages = observed.result.messages;
  } catch (error) {
    observed.error = error;
    if (error instanceof PromptyRunError) observed.messages = error.result.messages;
  }
  return observed;
}

// ---------------------------------------------------------------------------------------------
// Our messages and events in the vectors' shapes.

const textOf = (message: Message) =>
  typeof message.content === "string" ? message.content : message.content.map((part) => (part.type === "text" ? part.text : "")).join("");

function vectorMessage(message: Message): Record<string, unknown> {
  if (message.role === "tool") return { role: "tool", content: textOf(message), metadata: { tool_call_id: message.toolCallId } };
  if (message.role === "assistant") {
    const calls = message.content.filter((part) => part.type === "tool-call");
    if (calls.length === 0) return { role: "assistant", content: textOf(message) };
    const toolCalls = calls.map((part) => ({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } }));
    return { role: "assistant", content: textOf(message), metadata: { tool_calls: toolCalls } };
  }
  return { role: message.role, content: textOf(message) };
}

/** The vectors' count of messages: one more than they list once a tool has run (see the header). */
const vectorCount = (messages: readonly Message[]) => messages.length + (messages.some((message) => message.role === "tool") ? 1 : 0);

function vectorEvent(event: Observed["events"][number]): VectorEvent {
  if (event.type === "messages_updated") return { type: event.type, data: { message_count: vectorCount(event.data.messages) } };
  if (event.type === "done") return { type: event.type, data: { response: event.data.response } };
  return { type: event.type, data: event.data };
}

const SUMMARY_PREFIX = "[Summary of earlier conversation] ";

// ---------------------------------------------------------------------------------------------
// The checks.

function checkOutcome(vector: Vector, observed: Observed): void {
  const { expected } = vector;
  if (expected.error === undefined) {
    assert.equal(observed.error, undefined, `${vector.name}: the run failed: ${String(observed.error)}`);
    if (expected.result !== undefined) assert.equal(observed.result!.text, expected.result);
    return;
  }
  const error = observed.error;
  assert.ok(error instanceof PromptyRunError, `${vector.name}: expected ${expected.error}, got ${String(error ?? observed.result?.text)}`);
  // The vectors name Python's exception classes; ours are an error kind or the run's state.
  if (expected.error === "CancelledError") assert.equal(error.kind, "aborted");
  else if (expected.error === "GuardrailError") {
    assert.equal(error.result.state, "GUARDRAIL");
    assert.ok(error.message.endsWith(`denied: ${expected.error_reason}`), error.message);
  } else assert.equal(error.message, expected.error);
  if (expected.error_type === "ValueError") assert.equal(error.kind, "configuration");
  if (expected.result !== undefined) assert.fail(`${vector.name}: a vector with both result and error`);
}

function checkSteps(vector: Vector, observed: Observed): void {
  // The answers of this run (the vector's own messages come first).
  const assistants = observed.messages.slice(vector.input.messages.length).filter((message) => message.role === "assistant");
  vector.sequence.forEach((step, index) => {
    const answer = assistants[index];
    if (step.expected_tool_calls === null) {
      if (answer) assert.deepEqual(answer.content.filter((part) => part.type === "tool-call"), [], `${vector.name}: turn ${step.turn} asks for no tools`);
      return;
    }
    assert.ok(answer, `${vector.name}: no assistant message for turn ${step.turn}`);
    const calls = answer.content.flatMap((part) => (part.type === "tool-call" ? [{ id: part.id, name: part.name, arguments: JSON.parse(part.arguments) }] : []));
    assert.deepEqual(calls, step.expected_tool_calls, `${vector.name}: the tool calls of turn ${step.turn}`);
    for (const { tool_call_id: id, result } of step.tool_results ?? []) {
      // What a tool returns, for the calls that ran, and the loop's own result for a denied call.
      // (The calls of the response after the iteration cap never run: the cap is checked first.)
      if (!observed.executions.some((execution) => execution.id === id) && !result.startsWith("Tool denied by guardrail: ")) {
        assert.ok(observed.error, `${vector.name}: ${id} did not run in a run that completed`);
        continue;
      }
      const message = observed.messages.find((entry) => entry.role === "tool" && entry.toolCallId === id);
      assert.ok(message, `${vector.name}: no result for ${id}`);
      assert.equal(textOf(message), result, `${vector.name}: the result of ${id}`);
    }
    for (const [name, args] of Object.entries(step.expected_execution_args ?? {})) {
      assert.deepEqual(
        observed.executions.filter((execution) => execution.name === name).map((execution) => execution.args),
        [args],
        `${vector.name}: the arguments ${name} ran with`,
      );
    }
  });
}

function checkMessages(vector: Vector, observed: Observed): void {
  const { expected } = vector;
  if (expected.total_messages !== undefined) assert.equal(vectorCount(observed.messages), expected.total_messages, `${vector.name}: total_messages`);
  if (expected.message_sequence) assert.deepEqual(observed.messages.map(vectorMessage), expected.message_sequence);
  if (expected.assistant_tool_calls_message) {
    const message = observed.messages.find((entry) => entry.role === "assistant" && entry.content.some((part) => part.type === "tool-call"));
    assert.deepEqual(message && vectorMessage(message), expected.assistant_tool_calls_message);
  }
  if (expected.tool_result_message) {
    const message = observed.messages.find((entry) => entry.role === "tool");
    assert.ok(message, `${vector.name}: no tool result message`);
    // Here the vectors write the content as parts.
    assert.deepEqual({ ...vectorMessage(message), content: [{ type: "text", text: textOf(message) }] }, expected.tool_result_message);
  }
  if (expected.denied_tools) {
    const denied = observed.messages.filter((message) => message.role === "tool" && textOf(message).startsWith("Tool denied by guardrail: "));
    assert.deepEqual(
      denied.map((message) => (message.role === "tool" ? message.toolName : "")),
      expected.denied_tools,
    );
  }
  if (expected.tool_execution_order) {
    assert.deepEqual(
      observed.executions.map((execution) => execution.name),
      expected.tool_execution_order,
    );
  }
  if (expected.tools_executed !== undefined) assert.equal(observed.executions.length, expected.tools_executed);
}

function checkTrim(vector: Vector, observed: Observed): void {
  const { expected } = vector;
  if (!("trimmed_messages" in expected)) return;
  const first = observed.requests[0]!.messages.map((message) => ({ role: message.role, content: message.content }));
  const given = vector.input.messages;
  if (expected.trimmed_messages === null) {
    assert.deepEqual(first, given, `${vector.name}: the first request carries the messages untrimmed`);
    assert.ok(!observed.events.some((event) => event.type === "compaction_start"));
    return;
  }
  const wanted = expected.trimmed_messages as Array<{ role: string; content: string }>;
  assert.deepEqual(
    first.map((message) => message.role),
    wanted.map((message) => message.role),
    `${vector.name}: the roles of the first request`,
  );
  wanted.forEach((message, index) => {
    const sent = String(first[index]!.content);
    if (message.content.startsWith(SUMMARY_PREFIX)) {
      assert.ok(sent.startsWith(SUMMARY_PREFIX), `${vector.name}: the summary ${JSON.stringify(sent)}`);
      assert.ok(sent.includes(expected.summary_contains ?? "User asked"), `${vector.name}: the summary ${JSON.stringify(sent)}`);
    } else assert.equal(sent, message.content, `${vector.name}: message ${index} of the first request`);
  });
}

function checkEvents(vector: Vector, observed: Observed): void {
  const wanted = vector.expected.events as VectorEvent[] | undefined;
  if (!wanted) return;
  if (wanted.every((event) => event.data !== undefined)) {
    assert.deepEqual(observed.events.map(vectorEvent), wanted, `${vector.name}: the events`);
    return;
  }
  assert.ok(
    wanted.every((event) => event.data === undefined),
    `${vector.name}: events with and without payloads`,
  );
  assert.deepEqual(
    observed.events.map((event) => event.type).filter((type) => type !== "status"),
    wanted.map((event) => event.type),
    `${vector.name}: the event types`,
  );
}

// ---------------------------------------------------------------------------------------------

describe("the Prompty specification's agent-loop vectors (§9, §13) against invokeAgent", () => {
  it("holds the 28 agent vectors, each with fields the runner reads", () => {
    assert.equal(vectors.length, 28);
    assert.ok(vectors.every((vector) => vector.stage === "agent"));
    for (const vector of vectors) {
      for (const field of Object.keys(vector.expected)) assert.ok(EXPECTED_FIELDS.has(field), `${vector.name}: expected.${field} is not read`);
      for (const field of Object.keys(vector.input)) assert.ok(INPUT_FIELDS.has(field), `${vector.name}: input.${field} is not read`);
      for (const step of vector.sequence) for (const field of Object.keys(step)) assert.ok(STEP_FIELDS.has(field), `${vector.name}: sequence.${field} is not read`);
    }
  });

  it("the vectors' own message lists count one less than their totals once a tool ran", () => {
    const both = vectors.filter((vector) => vector.expected.message_sequence && vector.expected.total_messages !== undefined);
    assert.ok(both.length >= 4);
    for (const { name, expected } of both) {
      const listed = expected.message_sequence as Array<{ role: string }>;
      assert.equal(expected.total_messages, listed.length + (listed.some((message) => message.role === "tool") ? 1 : 0), name);
    }
  });

  for (const vector of vectors) {
    it(`${vector.name}: ${vector.description}`, async () => {
      const observed = await run(vector);
      checkOutcome(vector, observed);
      if (vector.expected.iterations !== undefined) assert.equal(observed.requests.length, vector.expected.iterations, `${vector.name}: model calls`);
      checkSteps(vector, observed);
      checkMessages(vector, observed);
      checkTrim(vector, observed);
      checkEvents(vector, observed);
    });
  }
});

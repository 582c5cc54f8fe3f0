/**
 * The action protocol (the KAOS two-phase loop). Phase 1: the model answers one JSON action per
 * turn, `{"tool": NAME, "arguments": {...}}`, `{"agent": NAME, "task": TEXT}` or `{}`. Phase 2, after
 * `{}` or an answer without an action: the model is asked for its final response, which streams.
 */
import type { Message, ToolResultMessage } from "../messages.js";
import { type Model, type ModelEvent, type ModelRequest, maxStepsMessage, STEP_LIMIT_FINISH, type ToolDefinition } from "../model/model.js";
import { extractJsonObjects, isJsonObject, type JsonObject, parseLenientJson, stripCodeFence } from "./json-extract.js";
import {
  argumentsText,
  argumentsValue,
  delegationTask,
  type ConversationFormat,
  finishEvent,
  fixedTextAnswer,
  innerRequest,
  newCallId,
  relayInnerCall,
  renderConversation,
  streamFinalResponse,
  TextProtocolModel,
  toolCallEvents,
  toolResultText,
  toolTurnsOfInput,
  withUserText,
  stepLimit,
} from "./shared.js";

/** Sub-agents appear to the model as tools with this prefix (`delegate_to_researcher`). */
export const DELEGATE_PREFIX = "delegate_to_";

export const TOOLS_INSTRUCTIONS = `To use a tool, respond with ONLY this JSON (no other text):
{"tool": "tool_name", "arguments": {"arg1": "value1"}}

Wait for the tool result before providing your final answer.`;

export const AGENT_INSTRUCTIONS = `To delegate a task to another agent, respond with ONLY this JSON (no other text):
{"agent": "agent_name", "task": "task description"}

Wait for the agent's response before providing your final answer.`;

export const NO_ACTION_INSTRUCTIONS = `When you have all the information needed to provide a final answer, respond with ONLY:
{}

Then the system will ask you to provide your final response.`;

/** The user message that starts phase 2. */
export const FINAL_RESPONSE_PROMPT = "Now provide your final response to the user, in plain text (no JSON action).";

export { maxStepsMessage };

export interface ActionToolCallingOptions {
  /** Action turns (phase 1 iterations) per user input before the answer is
   * `Reached maximum reasoning steps (N)`. Default 5, as in the seed. */
  maxSteps?: number;
}

export type ParsedAction =
  | { kind: "tool"; tool: string; arguments: string }
  | { kind: "agent"; agent: string; task: string }
  | { kind: "none" };

function isAction(value: JsonObject): boolean {
  return typeof value.tool === "string" || typeof value.agent === "string";
}

function toAction(value: JsonObject): ParsedAction {
  if (typeof value.tool === "string" && value.tool !== "") {
    return { kind: "tool", tool: value.tool, arguments: argumentsText(value.arguments) };
  }
  if (typeof value.agent === "string" && value.agent !== "") {
    return { kind: "agent", agent: value.agent, task: typeof value.task === "string" ? value.task : value.task === undefined ? "" : JSON.stringify(value.task) };
  }
  return { kind: "none" };
}

/**
 * Reads the action of one phase-1 answer like the seed's `_parse_action`: the whole content as
 * JSON (a ``` fence around it is allowed), else a JSON object on a line by itself, else (our
 * addition) the first balanced object in the text that is an action. Anything else, including
 * `{}`, prose and a truncated object, is no action.
 */
export function parseAction(content: string): ParsedAction {
  const whole = parseLenientJson(stripCodeFence(content));
  if (whole && isJsonObject(whole.value)) return toAction(whole.value);
  for (const rawLine of content.split("\n")) {
    const line = rawLine.trim();
    if (!line.startsWith("{") || !line.endsWith("}")) continue;
    const parsed = parseLenientJson(line);
    if (parsed && isJsonObject(parsed.value)) return toAction(parsed.value);
  }
  const action = extractJsonObjects(content).objects.find((object) => isAction(object.value));
  return action ? toAction(action.value) : { kind: "none" };
}

/** The system prompt addition of the seed's `_build_system_prompt` (everything after the instructions). */
export function actionModeInstructions(tools: readonly ToolDefinition[]): string {
  const plain = tools.filter((tool) => !tool.name.startsWith(DELEGATE_PREFIX));
  const agents = tools.filter((tool) => tool.name.startsWith(DELEGATE_PREFIX));
  const parts: string[] = [];
  if (plain.length > 0) {
    parts.push(
      `\n## Available Tools\n${plain
        .map((tool) => `- ${tool.name}: ${(tool.description ?? "").trim()}\n  arguments (JSON Schema): ${JSON.stringify(tool.parameters ?? { type: "object" })}`)
        .join("\n")}`,
    );
    parts.push(TOOLS_INSTRUCTIONS);
  }
  if (agents.length > 0) {
    parts.push(`\n## Available Agents for Delegation\n${agents.map((tool) => `- ${tool.name.slice(DELEGATE_PREFIX.length)}: ${(tool.description ?? "").trim()}`).join("\n")}`);
    parts.push(AGENT_INSTRUCTIONS);
  }
  if (parts.length > 0) parts.push(NO_ACTION_INSTRUCTIONS);
  return parts.join("\n");
}

const actionFormat: ConversationFormat = {
  toolCalls(calls) {
    return calls
      .map((call) => {
        const task = call.name.startsWith(DELEGATE_PREFIX) ? delegationTask(call.arguments) : undefined;
        if (task !== undefined) return JSON.stringify({ agent: call.name.slice(DELEGATE_PREFIX.length), task });
        return JSON.stringify({ tool: call.name, arguments: argumentsValue(call.arguments) });
      })
      .join("\n");
  },
  toolResults(results: ToolResultMessage[]) {
    return results
      .map((result) => {
        const failed = result.isError ? " (error)" : "";
        if (result.toolName.startsWith(DELEGATE_PREFIX)) {
          return `Response from agent "${result.toolName.slice(DELEGATE_PREFIX.length)}"${failed}:\n${toolResultText(result)}`;
        }
        return `Result of tool "${result.toolName}"${failed}:\n${toolResultText(result)}`;
      })
      .join("\n\n");
  },
};

class ActionToolCallingModel extends TextProtocolModel {
  private readonly maxSteps: number;

  constructor(
    inner: Model,
    private readonly options: ActionToolCallingOptions,
  ) {
    super(inner, "action tool calling");
    this.maxSteps = stepLimit(options.maxSteps, "actionToolCalling: maxSteps");
  }

  protected around(inner: Model): Model {
    return new ActionToolCallingModel(inner, this.options);
  }

  protected async *run(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const tools = request.tools ?? [];
    const messages = renderConversation(request.messages, actionFormat, actionModeInstructions(tools));
    // toolChoice "none" (a forced final answer) skips phase 1.
    if (request.toolChoice === "none") return yield* streamFinalResponse(this.inner, request, messages, true);
    if (toolTurnsOfInput(request).length >= this.maxSteps) return yield* fixedTextAnswer(maxStepsMessage(this.maxSteps), STEP_LIMIT_FINISH);

    const phaseOne = yield* relayInnerCall(this.inner, innerRequest(request, messages), { forwardStart: true });
    if (phaseOne.error) return yield { type: "error", error: phaseOne.error };
    if (phaseOne.nativeToolCalls > 0) return yield finishEvent("tool-calls", phaseOne.finishReason);
    const action = parseAction(phaseOne.text);
    if (action.kind === "tool") {
      yield* toolCallEvents({ id: newCallId(), name: action.tool, arguments: action.arguments });
      return yield finishEvent("tool-calls", phaseOne.finishReason);
    }
    if (action.kind === "agent") {
      yield* toolCallEvents({ id: newCallId(), name: `${DELEGATE_PREFIX}${action.agent}`, arguments: JSON.stringify({ task: action.task }) });
      return yield finishEvent("tool-calls", phaseOne.finishReason);
    }
    // The phase-1 answer (usually `{}`) stays in the conversation; an empty one is left out
    // because some providers reject empty assistant messages.
    const answered: Message[] = phaseOne.text.trim() === "" ? messages : [...messages, { role: "assistant", content: [{ type: "text", text: phaseOne.text }] }];
    const withAnswer = withUserText(answered, FINAL_RESPONSE_PROMPT);
    // Phase 2: the final response streams.
    yield* streamFinalResponse(this.inner, request, withAnswer, false);
  }
}

/**
 * Wraps a plain-text model in the action protocol. Each `stream()` call is one phase-1 step: an
 * action becomes one native-looking tool call (`{"agent": N, "task": T}` becomes a call to
 * `delegate_to_N` with `{task}`); `{}` or no action runs phase 2 inside the same stream and streams
 * the final response. Action turns of the current input (since `request.inputStart`) count
 * toward `maxSteps`; once they reach it the answer is `Reached maximum reasoning steps (N)`.
 * Never throws: failures end the stream with an `error` event.
 */
export function actionToolCalling(model: Model, options: ActionToolCallingOptions = {}): Model {
  return new ActionToolCallingModel(model, options);
}

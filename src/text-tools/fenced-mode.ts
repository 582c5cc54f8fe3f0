/**
 * The fenced protocol (KAOS's current runtime): the model writes tool calls and delegations as
 * fenced blocks in its text, with prose allowed before them:
 *
 *     ```tool_call
 *     {"tool": "calculator", "arguments": {"a": 5, "b": 3}}
 *     ```
 *     ```delegate
 *     {"agent": "worker", "task": "…"}
 *     ```
 *
 * Every block of one answer becomes one native-looking tool call, so they run as one wave; a
 * delegation is a call to the tool `delegate_to_<agent>` (local sub-agents and peers alike).
 */
import type { ToolResultMessage } from "../messages.js";
import { type Model, type ModelEvent, type ModelRequest, STEP_LIMIT_FINISH, type ToolDefinition } from "../model/model.js";
import { DELEGATE_PREFIX, maxStepsMessage } from "./action-mode.js";
import { isJsonObject, parseLenientJson } from "./json-extract.js";
import {
  argumentsText,
  argumentsValue,
  delegationTask,
  type ConversationFormat,
  closingFinish,
  finishEvent,
  fixedTextAnswer,
  innerRequest,
  newCallId,
  relayInnerCall,
  renderConversation,
  TextEmitter,
  TextProtocolModel,
  toolResultText,
  toolTurnsOfInput,
  stepLimit,
} from "./shared.js";

/** KAOS's tool instructions, verbatim (data-plane/kaos-framework/agent/client.py). */
export const FENCED_TOOLS_INSTRUCTIONS = `
To use a tool, respond with a JSON block in this exact format:
\`\`\`tool_call
{"tool": "tool_name", "arguments": {"arg1": "value1"}}
\`\`\`
Wait for the tool result before providing your final answer.
`;

/** KAOS's delegation instructions, verbatim. */
export const FENCED_AGENT_INSTRUCTIONS = `
To delegate a task to another agent, respond with:
\`\`\`delegate
{"agent": "agent_name", "task": "task description"}
\`\`\`
Wait for the agent's response before providing your final answer.
`;

export interface FencedToolCallingOptions {
  /** Tool turns per user input before the answer is `Reached maximum reasoning steps (N)`. Default 5, as in KAOS. */
  maxSteps?: number;
}

/** One block read from a model's text. */
export interface FencedBlock {
  kind: "tool_call" | "delegate";
  /** The tool to call (`delegate_to_<agent>` for a delegation). */
  name: string;
  /** JSON text of the arguments (`{"task": …}` for a delegation). */
  arguments: string;
  /** Where the block starts and ends in the text. */
  start: number;
  end: number;
}

const BLOCK = /```(tool_call|delegate)[^\S\r\n]*\r?\n([\s\S]*?)```/g;

function blockOf(kind: string, body: string, start: number, end: number): FencedBlock | undefined {
  const parsed = parseLenientJson(body.trim());
  if (!parsed || !isJsonObject(parsed.value)) return undefined;
  const value = parsed.value;
  if (kind === "tool_call") {
    if (typeof value.tool !== "string" || value.tool === "") return undefined;
    return { kind, name: value.tool, arguments: argumentsText(value.arguments), start, end };
  }
  if (typeof value.agent !== "string" || value.agent === "") return undefined;
  const task = typeof value.task === "string" ? value.task : value.task === undefined ? "" : JSON.stringify(value.task);
  return { kind: "delegate", name: `${DELEGATE_PREFIX}${value.agent}`, arguments: JSON.stringify({ task }), start, end };
}

/**
 * Every complete ```tool_call / ```delegate block in a text, in order. A block whose body is not
 * a JSON object naming its tool (or agent) is not a call and stays part of the text, as in KAOS.
 */
export function parseFencedBlocks(text: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  for (const match of text.matchAll(BLOCK)) {
    const block = blockOf(match[1], match[2], match.index, match.index + match[0].length);
    if (block) blocks.push(block);
  }
  return blocks;
}

/** KAOS's `_build_system_prompt`: the agent's instructions, then the tools and agents sections. */
export function fencedSystemPrompt(instructions: string, tools: readonly ToolDefinition[]): string {
  const plain = tools.filter((tool) => !tool.name.startsWith(DELEGATE_PREFIX));
  const agents = tools.filter((tool) => tool.name.startsWith(DELEGATE_PREFIX));
  const parts = ["## Agent System Prompt", instructions];
  if (plain.length > 0) {
    const lines = plain.map((tool) => `- **${tool.name}**: ${(tool.description ?? "").trim()}\n  Parameters: ${JSON.stringify(tool.parameters ?? {}, null, 2)}`);
    parts.push(`\n## Available Tools\n${lines.join("\n")}\n${FENCED_TOOLS_INSTRUCTIONS}`);
  }
  if (agents.length > 0) {
    const lines = agents.map((tool) => `- **${tool.name.slice(DELEGATE_PREFIX.length)}**: ${(tool.description ?? "").trim()}`);
    parts.push(`\n## Available Agents for Delegation\n${lines.join("\n")}\n${FENCED_AGENT_INSTRUCTIONS}`);
  }
  return parts.join("\n");
}

/** Calls are shown back as the blocks the model wrote; results as KAOS words them. */
const fencedFormat: ConversationFormat = {
  toolCalls(calls) {
    return calls
      .map((call) => {
        const task = call.name.startsWith(DELEGATE_PREFIX) ? delegationTask(call.arguments) : undefined;
        if (task !== undefined) return `\`\`\`delegate\n${JSON.stringify({ agent: call.name.slice(DELEGATE_PREFIX.length), task })}\n\`\`\``;
        return `\`\`\`tool_call\n${JSON.stringify({ tool: call.name, arguments: argumentsValue(call.arguments) })}\n\`\`\``;
      })
      .join("\n");
  },
  toolResults(results: ToolResultMessage[]) {
    const named = results.length > 1;
    return results
      .map((result) => {
        const delegated = result.toolName.startsWith(DELEGATE_PREFIX);
        const label = delegated
          ? result.isError
            ? "Delegation failed"
            : "Agent response"
          : result.isError
            ? "Tool execution failed"
            : "Tool result";
        const name = named ? ` (${delegated ? result.toolName.slice(DELEGATE_PREFIX.length) : result.toolName})` : "";
        return `${label}${name}: ${toolResultText(result)}`;
      })
      .join("\n\n");
  },
};

/**
 * Reads one answer as it streams. Until its first block is complete, nothing is shown (the text
 * may yet turn out to be prose before a call); from the first block on, the turn is a tool turn
 * (its call is announced first) and prose streams as commentary, held only where a block may be
 * opening. At the end, an answer without blocks is released as answer text.
 */
export class FencedBlockReader {
  private text = "";
  private scanFrom = 0;
  private shown = 0;
  private readonly blocks: Array<FencedBlock & { id: string }> = [];
  private readonly emitter: TextEmitter;

  constructor(textId = "text-0") {
    this.emitter = new TextEmitter(textId);
  }

  /** The events a text delta makes available now. */
  push(delta: string): ModelEvent[] {
    this.text += delta;
    const events: ModelEvent[] = [];
    BLOCK.lastIndex = this.scanFrom;
    for (let match = BLOCK.exec(this.text); match; match = BLOCK.exec(this.text)) {
      const end = match.index + match[0].length;
      this.scanFrom = end;
      const block = blockOf(match[1], match[2], match.index, end);
      if (!block) continue;
      const id = newCallId();
      this.blocks.push({ ...block, id });
      // The call is announced before the prose so the prose is commentary.
      events.push({ type: "tool-call-start", id, name: block.name });
      events.push(...this.emitter.delta(this.text.slice(this.shown, block.start)));
      this.shown = end;
    }
    BLOCK.lastIndex = 0;
    if (this.blocks.length > 0) {
      // Prose after a call streams, except from a ``` that may open the next block.
      const fence = this.text.indexOf("```", this.shown);
      let safe = fence === -1 ? this.text.length : fence;
      while (safe > this.shown && this.text[safe - 1] === "`") safe--;
      events.push(...this.emitter.delta(this.text.slice(this.shown, safe)));
      this.shown = safe;
    }
    return events;
  }

  /** Whether a block was found so far. */
  get hasCalls(): boolean {
    return this.blocks.length > 0;
  }

  /** The closing events: the rest of the prose, then every call's arguments (or the whole answer as text). */
  end(): ModelEvent[] {
    const events: ModelEvent[] = [];
    const rest = this.text.slice(this.shown);
    if (this.blocks.length === 0 || rest.trim() !== "") events.push(...this.emitter.delta(rest));
    this.shown = this.text.length;
    events.push(...this.emitter.end());
    for (const block of this.blocks) {
      events.push({ type: "tool-call-delta", id: block.id, delta: block.arguments });
      events.push({ type: "tool-call-end", id: block.id, name: block.name, arguments: block.arguments });
    }
    return events;
  }
}

class FencedToolCallingModel extends TextProtocolModel {
  private readonly maxSteps: number;

  constructor(
    inner: Model,
    private readonly options: FencedToolCallingOptions,
  ) {
    super(inner, "fenced tool calling");
    this.maxSteps = stepLimit(options.maxSteps, "fencedToolCalling: maxSteps");
  }

  protected around(inner: Model): Model {
    return new FencedToolCallingModel(inner, this.options);
  }

  protected async *run(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const tools = request.tools ?? [];
    // As in KAOS, blocks are read even when the agent has no tools (the call then fails as unknown);
    // only a forced final answer (toolChoice "none") is passed through untouched.
    const useTools = request.toolChoice !== "none";
    if (useTools && toolTurnsOfInput(request).length >= this.maxSteps) return yield* fixedTextAnswer(maxStepsMessage(this.maxSteps), STEP_LIMIT_FINISH);
    // KAOS's layout: the first system message (the agent's instructions) becomes its system prompt.
    const systemIndex = request.messages.findIndex((message) => message.role === "system");
    const instructions = systemIndex === -1 ? "" : String((request.messages[systemIndex] as { content: string }).content);
    const rest = request.messages.filter((_, index) => index !== systemIndex);
    const messages = renderConversation(rest, fencedFormat);
    if (useTools || systemIndex !== -1) messages.unshift({ role: "system", content: useTools ? fencedSystemPrompt(instructions, tools) : instructions });

    const emitter = new TextEmitter();
    const reader = new FencedBlockReader();
    const summary = yield* relayInnerCall(this.inner, innerRequest(request, messages), {
      forwardStart: true,
      onText: (delta) => (useTools ? reader.push(delta) : emitter.delta(delta)),
    });
    if (summary.error) return yield { type: "error", error: summary.error };
    if (!useTools) {
      yield* emitter.end();
      return yield closingFinish(summary);
    }
    yield* reader.end();
    yield reader.hasCalls ? finishEvent("tool-calls", summary.finishReason) : closingFinish(summary);
  }
}

/**
 * Wraps a plain-text model in KAOS's fenced protocol: the system prompt is KAOS's (the agent's
 * instructions, `## Available Tools` with KAOS's instructions, `## Available Agents for
 * Delegation`); every ```tool_call and ```delegate block of an answer becomes one tool call of the
 * same wave; prose before a block is commentary; tool turns since the last user message count
 * toward `maxSteps`, after which the answer is `Reached maximum reasoning steps (N)`.
 * Never throws: failures end the stream with an `error` event.
 */
export function fencedToolCalling(model: Model, options: FencedToolCallingOptions = {}): Model {
  return new FencedToolCallingModel(model, options);
}

/**
 * For `auto`: passes a native stream through, but reads fenced blocks in its text. Text streams
 * as it comes until a ``` fence (where a block may begin); from there it is held to the end. When
 * the held text has blocks and the model made no native calls, they become tool calls.
 */
export async function* recognizeFencedBlocks(source: AsyncIterable<ModelEvent>): AsyncGenerator<ModelEvent> {
  // The inner text events pass through as they are (same ids); only what may be a block is held.
  let held = "";
  let holding = false;
  let pending = "";
  let textId: string | undefined;
  let heldEnd: ModelEvent | undefined;
  let nativeCalls = 0;
  const release = function* (text: string): Generator<ModelEvent> {
    if (text !== "" && textId !== undefined) yield { type: "text-delta", id: textId, delta: text };
  };
  for await (const event of source) {
    switch (event.type) {
      case "text-start":
        textId = event.id;
        yield event;
        continue;
      case "text-end":
        if (holding || pending !== "") heldEnd = event;
        else yield event;
        continue;
      case "text-delta": {
        textId = event.id;
        if (holding) {
          held += event.delta;
          continue;
        }
        const text = pending + event.delta;
        const fence = text.indexOf("```");
        if (fence !== -1) {
          holding = true;
          held = text.slice(fence);
          pending = "";
          yield* release(text.slice(0, fence));
          continue;
        }
        pending = /`*$/.exec(text)?.[0] ?? "";
        yield* release(text.slice(0, text.length - pending.length));
        continue;
      }
      case "tool-call-end":
        nativeCalls++;
        yield event;
        continue;
      case "finish": {
        const blocks = nativeCalls === 0 ? parseFencedBlocks(held) : [];
        if (blocks.length === 0) {
          yield* release(pending + held);
          if (heldEnd) yield heldEnd;
          yield event;
          return;
        }
        if (heldEnd) yield heldEnd;
        const reader = new FencedBlockReader("text-fenced");
        yield* reader.push(held);
        yield* reader.end();
        yield { ...event, reason: { unified: "tool-calls", raw: event.reason.raw ?? "tool-calls" } };
        return;
      }
      case "error":
        yield* release(pending + held);
        if (heldEnd) yield heldEnd;
        yield event;
        return;
      default:
        yield event;
    }
  }
  yield* release(pending + held);
  if (heldEnd) yield heldEnd;
}

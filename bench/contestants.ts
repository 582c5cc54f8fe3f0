// The contestants: one conversation runner per library, all against the same mock provider.
//
// Each contestant builds its client, agent and tool once (`prepare`) and then plays the scripted
// conversation as often as asked. The tool is the harness's, so the harness counts the tool
// calls itself; the final text is returned for checking. A contestant that skips a tool result
// gets an error from the mock provider, so a broken contestant cannot look fast.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, jsonSchema, stepCountIs, streamText, tool as aiTool } from "ai";
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { Agent, defineTool } from "../src/index.js";
import { google } from "../src/providers/google/index.js";
import { openaiChat } from "../src/providers/openai/index.js";

/**
 * The peers' releases for the Node this process runs on: their current ones (`openai` 7 and
 * `@openai/agents` 0.20, which need Node 22, installed under the aliases `openai7` and
 * `openai-agents20`) on Node 22 and later, else the last releases that run on Node 20 (`openai` 6,
 * `@openai/agents` 0.14). `ai` 7 runs on both. Loaded on first use, so a worker loads one set.
 */
export const CURRENT_PEERS = Number(process.versions.node.split(".")[0]) >= 22;

async function openaiClient(baseURL: string): Promise<OpenAI> {
  const { default: Client } = CURRENT_PEERS ? ((await import("openai7")) as unknown as typeof import("openai")) : await import("openai");
  return new Client({ baseURL, apiKey: API_KEY, maxRetries: 0 });
}

function openaiAgentsModule(): Promise<typeof import("@openai/agents")> {
  return CURRENT_PEERS ? (import("openai-agents20") as unknown as Promise<typeof import("@openai/agents")>) : import("@openai/agents");
}

/** The versions of the peers this process measures (`CURRENT_PEERS`), for the report. */
export function peerVersions(): string {
  const require = createRequire(import.meta.url);
  // Not every package exports its package.json: the folder above its entry point that has one.
  const version = (name: string) => {
    for (let folder = dirname(require.resolve(name)); folder !== dirname(folder); folder = dirname(folder)) {
      const file = join(folder, "package.json");
      if (!existsSync(file)) continue;
      const manifest = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version: string };
      if (manifest.name !== undefined && manifest.version) return manifest.version;
    }
    return "?";
  };
  const [openai, agents] = CURRENT_PEERS ? ["openai7", "openai-agents20"] : ["openai", "@openai/agents"];
  return `openai ${version(openai)}, @openai/agents ${version(agents)}, ai ${version("ai")}, @ai-sdk/openai-compatible ${version("@ai-sdk/openai-compatible")}`;
}

export const SYSTEM_PROMPT = "You are a benchmark agent. Use the lookup tool until you know the answer.";
export const USER_INPUT = "Look up the values, then answer.";

export interface LookupArguments {
  n: number;
  i: number;
}

/** The one tool every contestant exposes. */
export interface BenchTool {
  name: string;
  description: string;
  parameters: {
    type: "object";
    properties: Record<string, { type: "integer"; description: string }>;
    required: string[];
    additionalProperties: false;
  };
  execute(args: LookupArguments): string | Promise<string>;
}

export function lookupTool(execute: BenchTool["execute"]): BenchTool {
  return {
    name: "lookup",
    description: "Looks up one value.",
    parameters: {
      type: "object",
      properties: { n: { type: "integer", description: "turn" }, i: { type: "integer", description: "index" } },
      required: ["n", "i"],
      additionalProperties: false,
    },
    execute,
  };
}

export interface ConversationSetup {
  baseURL: string;
  /** The mock provider's script name. */
  model: string;
  stream: boolean;
  /** Model calls allowed (the step limit). */
  maxTurns: number;
  tool: BenchTool;
}

export interface ConversationHooks {
  /** Called with each final-answer text delta as it arrives (streaming only). */
  onTextDelta?(delta: string): void;
}

/** Plays the conversation once; resolves with the final answer text. */
export type Conversation = (hooks?: ConversationHooks) => Promise<string>;

export type ContestantRole = "floor" | "floor-variant" | "baseline" | "agentloop" | "agentloop-variant" | "peer";

export interface Contestant {
  name: string;
  /** `floor`: hand-written fetch; `floor-variant`: the same on node:http; `baseline`: bare loop on
   * the official SDK; `agentloop-variant`: agentloop configured otherwise; `peer`: another framework. */
  role: ContestantRole;
  prepare(setup: ConversationSetup): Promise<Conversation>;
}

const API_KEY = "bench-key";

function openaiTools(tool: BenchTool): ChatCompletionTool[] {
  return [{ type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } }];
}

interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** Runs a wave the way every framework does: all calls at once, results in call order. */
async function executeCalls(tool: BenchTool, calls: readonly WireToolCall[], messages: ChatCompletionMessageParam[]): Promise<void> {
  const outputs = await Promise.all(calls.map((call) => tool.execute(JSON.parse(call.function.arguments) as LookupArguments)));
  for (let index = 0; index < calls.length; index++) messages.push({ role: "tool", tool_call_id: calls[index].id, content: outputs[index] });
}

function addDelta(calls: WireToolCall[], delta: { index: number; id?: string; function?: { name?: string; arguments?: string } }): void {
  const call = (calls[delta.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
  if (delta.id) call.id = delta.id;
  if (delta.function?.name) call.function.name += delta.function.name;
  if (delta.function?.arguments) call.function.arguments += delta.function.arguments;
}

/** The floors' hand-written SSE reader: feed it text, it collects the answer and the tool calls. */
function sseAnswer(calls: WireToolCall[], hooks: ConversationHooks | undefined) {
  let buffer = "";
  let content = "";
  return {
    feed(text: string): void {
      buffer += text;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!event.startsWith("data: ")) continue;
        const data = event.slice(6);
        if (data === "[DONE]") continue;
        const delta = (JSON.parse(data) as { choices: Array<{ delta: any }> }).choices[0]?.delta;
        if (!delta) continue;
        if (delta.content) {
          content += delta.content;
          hooks?.onTextDelta?.(delta.content);
        }
        if (delta.tool_calls) for (const call of delta.tool_calls) addDelta(calls, call);
      }
    },
    content: () => content,
  };
}

/** The floor: `fetch`, `JSON.stringify`, and a hand-written SSE reader. Nothing else. */
export const rawFetch: Contestant = {
  name: "raw-fetch",
  role: "floor",
  async prepare(setup) {
    const url = `${setup.baseURL}/chat/completions`;
    const headers = { "content-type": "application/json", authorization: `Bearer ${API_KEY}` };
    const tools = openaiTools(setup.tool);
    const decoder = new TextDecoder();
    return async (hooks) => {
      const messages: ChatCompletionMessageParam[] = [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: USER_INPUT },
      ];
      for (let turn = 0; turn < setup.maxTurns; turn++) {
        const response = await fetch(url, { method: "POST", headers, body: JSON.stringify({ model: setup.model, messages, tools, stream: setup.stream }) });
        if (!response.ok) throw new Error(`raw-fetch: HTTP ${response.status}: ${await response.text()}`);
        let content = "";
        const calls: WireToolCall[] = [];
        if (setup.stream) {
          const answer = sseAnswer(calls, hooks);
          for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) answer.feed(decoder.decode(bytes, { stream: true }));
          content = answer.content();
        } else {
          const message = ((await response.json()) as { choices: Array<{ message: { content: string | null; tool_calls?: WireToolCall[] } }> }).choices[0].message;
          content = message.content ?? "";
          if (message.tool_calls) calls.push(...message.tool_calls);
        }
        if (calls.length === 0) return content;
        messages.push({ role: "assistant", content: content || null, tool_calls: calls });
        await executeCalls(setup.tool, calls, messages);
      }
      throw new Error(`raw-fetch: no final answer within ${setup.maxTurns} model calls`);
    };
  },
};

/**
 * The floor on node:http instead of fetch (keep-alive agent, the same hand-written SSE reader):
 * the cheapest HTTP a Node program has. agentloop's adapter speaks node:http, so agentloop minus
 * this row is the loop's own cost on the same transport.
 */
export const rawHttp: Contestant = {
  name: "raw-http",
  role: "floor-variant",
  async prepare(setup) {
    const url = new URL(`${setup.baseURL}/chat/completions`);
    const agent = new HttpAgent({ keepAlive: true });
    const headers = { "content-type": "application/json", authorization: `Bearer ${API_KEY}` };
    const tools = openaiTools(setup.tool);
    const post = (body: string) =>
      new Promise<IncomingMessage>((resolve, reject) => {
        const request = httpRequest(url, { method: "POST", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) } }, resolve);
        request.on("error", reject);
        request.end(body);
      });
    return async (hooks) => {
      const messages: ChatCompletionMessageParam[] = [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: USER_INPUT },
      ];
      for (let turn = 0; turn < setup.maxTurns; turn++) {
        const response = await post(JSON.stringify({ model: setup.model, messages, tools, stream: setup.stream }));
        response.setEncoding("utf8");
        if (response.statusCode !== 200) throw new Error(`raw-http: HTTP ${response.statusCode}`);
        let content = "";
        const calls: WireToolCall[] = [];
        if (setup.stream) {
          const answer = sseAnswer(calls, hooks);
          for await (const text of response as AsyncIterable<string>) answer.feed(text);
          content = answer.content();
        } else {
          let text = "";
          for await (const piece of response as AsyncIterable<string>) text += piece;
          const message = (JSON.parse(text) as { choices: Array<{ message: { content: string | null; tool_calls?: WireToolCall[] } }> }).choices[0].message;
          content = message.content ?? "";
          if (message.tool_calls) calls.push(...message.tool_calls);
        }
        if (calls.length === 0) return content;
        messages.push({ role: "assistant", content: content || null, tool_calls: calls });
        await executeCalls(setup.tool, calls, messages);
      }
      throw new Error(`raw-http: no final answer within ${setup.maxTurns} model calls`);
    };
  },
};

/** A bare loop on the official `openai` SDK: what you write without a framework. */
export const openaiSdk: Contestant = {
  name: "openai-sdk",
  role: "baseline",
  async prepare(setup) {
    const client = await openaiClient(setup.baseURL);
    const tools = openaiTools(setup.tool);
    return async (hooks) => {
      const messages: ChatCompletionMessageParam[] = [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: USER_INPUT },
      ];
      for (let turn = 0; turn < setup.maxTurns; turn++) {
        let content = "";
        const calls: WireToolCall[] = [];
        if (setup.stream) {
          const stream = await client.chat.completions.create({ model: setup.model, messages, tools, stream: true });
          for await (const chunk of stream) {
            const delta = chunk.choices[0]?.delta;
            if (!delta) continue;
            if (delta.content) {
              content += delta.content;
              hooks?.onTextDelta?.(delta.content);
            }
            if (delta.tool_calls) for (const call of delta.tool_calls) addDelta(calls, call);
          }
        } else {
          const completion = await client.chat.completions.create({ model: setup.model, messages, tools });
          const message = completion.choices[0].message;
          content = message.content ?? "";
          for (const call of message.tool_calls ?? []) if (call.type === "function") calls.push(call);
        }
        if (calls.length === 0) return content;
        messages.push({ role: "assistant", content: content || null, tool_calls: calls });
        await executeCalls(setup.tool, calls, messages);
      }
      throw new Error(`openai-sdk: no final answer within ${setup.maxTurns} model calls`);
    };
  },
};

function benchTool(tool: BenchTool) {
  return defineTool({
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    execute: (args) => tool.execute(args as unknown as LookupArguments),
  });
}

function agentloopConversation(name: string, agent: Agent): Conversation {
  return async (hooks) => {
    const run = agent.run(USER_INPUT);
    if (hooks?.onTextDelta) for await (const delta of run.textStream()) hooks.onTextDelta(delta);
    const result = await run;
    if (result.state !== "COMPLETED") throw new Error(`${name}: run ended ${result.state}: ${result.reason} ${result.error?.message ?? ""}`);
    return result.text;
  };
}

/** agentloop: the core `Agent` on the openai-chat adapter, as a user writes it. */
export const agentloop: Contestant = {
  name: "agentloop",
  role: "agentloop",
  async prepare(setup) {
    const agent = new Agent({
      name: "bench",
      instructions: SYSTEM_PROMPT,
      model: openaiChat(setup.model, { baseURL: setup.baseURL, apiKey: API_KEY, stream: setup.stream }),
      tools: [benchTool(setup.tool)],
      maxTurns: setup.maxTurns,
    });
    return agentloopConversation("agentloop", agent);
  },
};

/**
 * agentloop with the official `openai` SDK under its adapter (`client: new OpenAI(...)`, the
 * adapter's opt-in SDK path): the same loop, to show what the SDK costs per call.
 */
export const agentloopSdk: Contestant = {
  name: "agentloop-sdk",
  role: "agentloop-variant",
  async prepare(setup) {
    const client = await openaiClient(setup.baseURL);
    const agent = new Agent({
      name: "bench",
      instructions: SYSTEM_PROMPT,
      model: openaiChat(setup.model, { client, stream: setup.stream }),
      tools: [benchTool(setup.tool)],
      maxTurns: setup.maxTurns,
    });
    return agentloopConversation("agentloop-sdk", agent);
  },
};

/**
 * agentloop on its native Gemini adapter (`agentloop/google`: `generateContent` /
 * `streamGenerateContent?alt=sse` on node:http), against the mock's Gemini routes for the same
 * script: what the other wire format costs the same loop.
 */
export const agentloopGemini: Contestant = {
  name: "agentloop (gemini native)",
  role: "agentloop-variant",
  async prepare(setup) {
    const agent = new Agent({
      name: "bench",
      instructions: SYSTEM_PROMPT,
      model: google(setup.model, { baseURL: setup.baseURL.replace(/\/v1$/, "/v1beta"), apiKey: API_KEY, stream: setup.stream }),
      tools: [benchTool(setup.tool)],
      maxTurns: setup.maxTurns,
    });
    return agentloopConversation("agentloop (gemini native)", agent);
  },
};

/** The Vercel AI SDK: `generateText` / `streamText` with a step limit, OpenAI-compatible provider. */
export const vercelAi: Contestant = {
  name: "vercel-ai",
  role: "peer",
  async prepare(setup) {
    const provider = createOpenAICompatible({ name: "mock", baseURL: setup.baseURL, apiKey: API_KEY, includeUsage: true });
    const model = provider.chatModel(setup.model);
    const tools = {
      [setup.tool.name]: aiTool({
        description: setup.tool.description,
        inputSchema: jsonSchema<LookupArguments>(setup.tool.parameters),
        execute: async (args: LookupArguments) => setup.tool.execute(args),
      }),
    };
    const common = { model, system: SYSTEM_PROMPT, prompt: USER_INPUT, tools, stopWhen: stepCountIs(setup.maxTurns), maxRetries: 0 };
    return async (hooks) => {
      if (!setup.stream) return (await generateText(common)).text;
      let failure: unknown;
      const result = streamText({ ...common, onError: ({ error }) => void (failure = error) });
      for await (const delta of result.textStream) hooks?.onTextDelta?.(delta);
      if (failure) throw failure;
      return await result.text;
    };
  },
};

/** The OpenAI Agents SDK on a Chat Completions model pointed at the mock, tracing off. */
export const openaiAgents: Contestant = {
  name: "openai-agents",
  role: "peer",
  async prepare(setup) {
    const { OpenAIProvider, Agent: OpenAIAgent, run: openaiAgentsRun, setTracingDisabled, tool: openaiAgentsTool } = await openaiAgentsModule();
    setTracingDisabled(true);
    // The provider builds an `OpenAIChatCompletionsModel` on its own `OpenAI` client (the SDK
    // pins a different `openai` major than ours) with our base URL.
    const provider = new OpenAIProvider({ baseURL: setup.baseURL, apiKey: API_KEY, useResponses: false });
    const model = await provider.getModel(setup.model);
    if (model.constructor.name !== "OpenAIChatCompletionsModel") throw new Error(`openai-agents: expected a Chat Completions model, got ${model.constructor.name}`);
    const agent = new OpenAIAgent({
      name: "bench",
      instructions: SYSTEM_PROMPT,
      model,
      tools: [
        openaiAgentsTool({
          name: setup.tool.name,
          description: setup.tool.description,
          parameters: setup.tool.parameters,
          strict: true,
          execute: async (args) => setup.tool.execute(args as LookupArguments),
        }),
      ],
    });
    return async (hooks) => {
      if (!setup.stream) {
        const result = await openaiAgentsRun(agent, USER_INPUT, { maxTurns: setup.maxTurns });
        return String(result.finalOutput ?? "");
      }
      const result = await openaiAgentsRun(agent, USER_INPUT, { maxTurns: setup.maxTurns, stream: true });
      for await (const delta of result.toTextStream()) hooks?.onTextDelta?.(delta);
      await result.completed;
      if (result.error) throw result.error;
      return String(result.finalOutput ?? "");
    };
  },
};

export const allContestants: readonly Contestant[] = [rawFetch, rawHttp, openaiSdk, agentloop, agentloopSdk, vercelAi, openaiAgents];

/** Scenario 1's contestants: everyone, and agentloop on the native Gemini adapter beside its Chat Completions rows. */
export const loopContestants: readonly Contestant[] = [rawFetch, rawHttp, openaiSdk, agentloop, agentloopSdk, agentloopGemini, vercelAi, openaiAgents];

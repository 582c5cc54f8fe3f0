import { AGENTLOOP_EVENTS_EXTENSION } from "../a2a/events.js";
import type { AgentCard } from "@a2a-js/sdk";

export interface AgentCardInput {
  name: string;
  description: string;
  /** The server's public base URL (no trailing slash). */
  baseUrl: string;
  version: string;
  tools: Array<{ name: string; description: string; inputSchema?: unknown }>;
}

/** The JSON-RPC endpoint path of the A2A protocol on this server. */
export const A2A_PATH = "/a2a";
/** The header an A2A client names its protocol version in (the SDK's `A2A_VERSION_HEADER`; its own copy here so serving the card does not load the SDK). */
export const A2A_VERSION_HEADER = "A2A-Version";

/**
 * The A2A agent card. It is an A2A 1.0 card (`supportedInterfaces`) that also carries the
 * 0.3 top-level fields (`url`, `protocolVersion`, `preferredTransport`) KAOS and older clients read.
 */
export function buildAgentCard(input: AgentCardInput): AgentCard & Record<string, unknown> {
  const url = `${input.baseUrl}${A2A_PATH}`;
  const skills = input.tools.map((tool) => ({
    id: tool.name,
    name: tool.name,
    description: tool.description,
    tags: tool.name.startsWith("delegate_to_") ? ["delegation"] : ["tool"],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }));
  // A card needs at least one skill: an agent without tools publishes itself.
  if (skills.length === 0) {
    skills.push({
      id: input.name,
      name: input.name,
      description: input.description,
      tags: ["agent"],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    });
  }
  const card: AgentCard & Record<string, unknown> = {
    name: input.name,
    description: input.description,
    version: input.version,
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "0.3" },
    ],
    provider: undefined,
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        {
          uri: AGENTLOOP_EVENTS_EXTENSION,
          description: 'working status updates carry the run\'s tool calls and progress blocks as a data part { "agentloop_event": … }; input-required carries { "approval_required": … }',
          required: false,
          params: undefined,
        },
      ],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain", "application/json"],
    skills,
    signatures: [],
    // A2A 0.3 fields, for KAOS and 0.3 clients.
    url,
    protocolVersion: "0.3.0",
    preferredTransport: "JSONRPC",
  };
  return card;
}

/** The A2A 0.3 top-level fields of the card. */
const LEGACY_CARD_FIELDS = ["url", "protocolVersion", "preferredTransport"] as const;

/**
 * The card for the protocol version a request names (`A2A-Version`, header or query parameter).
 * A 0.x client gets the card with the 0.3 fields too; a 1.x client gets the pure 1.0 card (the
 * 1.0 schema allows no other fields). A request that names no version gets `unnamed`'s card (each path names its own):
 * the discovery path `/.well-known/agent-card.json` serves the pure 1.0 card (what the A2A TCK's
 * 1.0 line validates, and what the official SDK's card handler serves unless its legacy mode is
 * on), the pre-1.0 path `/.well-known/agent.json` the card with the 0.3 fields.
 */
export function agentCardForVersion(card: Record<string, unknown>, requestedVersion: string | undefined, unnamed: "1.0" | "0.3"): Record<string, unknown> {
  const version = requestedVersion?.trim() || unnamed;
  if (version.startsWith("0.")) return card;
  const modern = { ...card };
  for (const field of LEGACY_CARD_FIELDS) delete modern[field];
  return modern;
}

/** KAOS's agent card (`GET /.well-known/agent`): capabilities as a list, tools as skills with `inputSchema`. */
export interface KaosAgentCard {
  name: string;
  description: string;
  url: string;
  skills: Array<{ name: string; description: string; inputSchema: unknown }>;
  capabilities: string[];
}

/**
 * The card KAOS's runtime serves: `message_processing` and `task_execution` always,
 * `tool_execution` when the agent has tools, `task_delegation` when it has sub-agents or peers.
 * Delegation tools are not skills (KAOS lists its MCP tools only).
 */
export function buildKaosAgentCard(input: AgentCardInput & { delegates: boolean }): KaosAgentCard {
  const tools = input.tools.filter((tool) => !tool.name.startsWith("delegate_to_"));
  const capabilities = ["message_processing", "task_execution"];
  if (tools.length > 0) capabilities.push("tool_execution");
  if (input.delegates || input.tools.length > tools.length) capabilities.push("task_delegation");
  return {
    name: input.name,
    description: input.description,
    url: input.baseUrl,
    skills: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema ?? { type: "object", properties: {} } })),
    capabilities,
  };
}

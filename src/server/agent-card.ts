import type { AgentCard } from "@a2a-js/sdk";

export interface AgentCardInput {
  name: string;
  description: string;
  /** The server's public base URL (no trailing slash). */
  baseUrl: string;
  version: string;
  tools: Array<{ name: string; description: string }>;
}

/** The JSON-RPC endpoint path of the A2A protocol on this server. */
export const A2A_PATH = "/a2a";

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
  const card: AgentCard & Record<string, unknown> = {
    name: input.name,
    description: input.description,
    version: input.version,
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "0.3" },
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills,
    signatures: [],
    // A2A 0.3 fields, for KAOS and 0.3 clients.
    url,
    protocolVersion: "0.3.0",
    preferredTransport: "JSONRPC",
  };
  return card;
}

/** The shapes of the server's routes the studio reads (docs/server.md): types only, shared with node tests and the bench. */

/** One stored event, as `GET /v1/sessions/{id}/events` returns it. */
export interface StoredEvent {
  event_id: string;
  session_id: string;
  seq: number;
  timestamp: string;
  event_type: string;
  content: unknown;
  metadata: Record<string, unknown>;
}

export interface SessionSummary {
  session_id: string;
  created_at: string;
  updated_at: string;
  event_count: number;
  last_seq: number;
}

export interface PendingApproval {
  session_id: string;
  checkpoint_id: string;
  run_id?: string;
  requested_at: string;
  tool_call_id: string;
  tool: string;
  arguments: unknown;
  arguments_hash: string;
  agent_path: string[];
}

export interface ReadyStatus {
  status: "starting" | "ready" | "degraded" | "failed";
  name: string;
  timestamp: number;
  unavailable?: Array<{ kind: string; name: string; reason: string }>;
  error?: string;
}

export interface AgentInfo {
  name: string;
  description: string;
  ready: ReadyStatus;
  card: Record<string, unknown>;
  tools: Array<{ name: string; description: string; inputSchema: unknown }>;
  mcpServers: Array<{ name: string; transport: string; url?: string; command?: string; args?: string[]; state: string; reason?: string }>;
  subAgents: Array<{ name: string; url: string; protocol: string; state: string; reason?: string }>;
  settings: Record<string, unknown> & { durable: unknown };
}

/** A durable run as `GET /v1/runs` shows it (DBOS's status). */
export interface DurableRun {
  runId: string;
  status: string;
  sessionId?: string;
  input?: string;
  executorId?: string;
  createdAt: string;
  updatedAt?: string;
  pendingApprovals?: Array<{ toolCallId: string; tool: string; arguments: Record<string, unknown> }>;
  steps?: Array<{ id: number; name: string; error?: string }>;
  result?: { state: string; reason: string; text: string };
}


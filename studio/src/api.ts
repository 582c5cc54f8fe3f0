/**
 * The studio's one client of the server's public routes (docs/server.md): the same routes any
 * user has, with the bearer key the person typed. No private API.
 */

import type { AgentInfo, DurableRun, PendingApproval, ReadyStatus, SessionSummary, StoredEvent } from "./wire.js";

export type { AgentInfo, DurableRun, PendingApproval, ReadyStatus, SessionSummary, StoredEvent } from "./wire.js";

/** A refused request: the server's `{ error: { message, code } }`, with the HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

const KEY_STORAGE = "agentloop.studio.key";

/** The key lives in this tab's sessionStorage (never in a URL, never in localStorage). */
export const keyStore = {
  get: (): string | undefined => sessionStorage.getItem(KEY_STORAGE) ?? undefined,
  set: (key: string) => sessionStorage.setItem(KEY_STORAGE, key),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

export function authHeaders(): Record<string, string> {
  const key = keyStore.get();
  return key ? { authorization: `Bearer ${key}` } : {};
}

async function request<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(path, { ...init, headers: { ...authHeaders(), ...(init.body ? { "content-type": "application/json" } : {}), ...(init.headers as Record<string, string>) } });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const error = (body as { error?: { message?: string; code?: string } } | undefined)?.error;
    throw new ApiError(response.status, error?.message ?? `${response.status} ${response.statusText}`, error?.code);
  }
  return body as T;
}

const enc = encodeURIComponent;

export const api = {
  agent: () => request<AgentInfo>("/v1/agent"),
  ready: () => request<ReadyStatus>("/ready"),
  sessions: () => request<{ sessions: SessionSummary[]; total: number }>("/v1/sessions"),
  /** A session's events: the first `limit` after `afterSeq`, or its last `limit` without it. */
  events: (sessionId: string, afterSeq?: number, limit = 10_000) =>
    request<{ session_id: string; events: StoredEvent[]; last_seq: number }>(`/v1/sessions/${enc(sessionId)}/events?limit=${limit}${afterSeq !== undefined ? `&after_seq=${afterSeq}` : ""}`),
  approvals: () => request<{ pending: PendingApproval[]; total: number }>("/v1/approvals"),
  durableRuns: () => request<{ runs: DurableRun[]; total: number }>("/v1/runs?limit=200"),
  durableRun: (runId: string) => request<DurableRun>(`/v1/runs/${enc(runId)}`),
  cancelRun: (runId: string) => request<DurableRun>(`/v1/runs/${enc(runId)}/cancel`, { method: "POST" }),
  resumeRun: (runId: string) => request<DurableRun>(`/v1/runs/${enc(runId)}/resume`, { method: "POST" }),
};

/**
 * Reads a server-sent event stream from a fetch response (EventSource cannot send the bearer key):
 * calls `onData` with each event's data until `[DONE]` or the end.
 */
export async function readSse(response: Response, onData: (data: string, id?: string) => void): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
        else if (line.startsWith("id:")) id = line.slice(3).trim();
      }
      if (data.length > 0) {
        const text = data.join("\n");
        if (text === "[DONE]") return;
        onData(text, id);
      }
      end = buffer.indexOf("\n\n");
    }
  }
}

/** A streamed request (approvals, a durable run's reattach): refused ones throw an ApiError. */
export async function streamRequest(path: string, init: RequestInit, onData: (data: string, id?: string) => void): Promise<void> {
  const response = await fetch(path, { ...init, headers: { ...authHeaders(), ...(init.body ? { "content-type": "application/json" } : {}) } });
  if (!response.ok) {
    const body = (await response.json().catch(() => undefined)) as { error?: { message?: string; code?: string } } | undefined;
    throw new ApiError(response.status, body?.error?.message ?? `${response.status}`, body?.error?.code);
  }
  await readSse(response, onData);
}

/** Decides pending calls (`POST /v1/approvals`, streamed): `onText` receives the answer as it streams in. */
export async function decideApprovals(
  sessionId: string,
  decisions: Record<string, { approve: boolean; reason?: string; arguments_hash: string }>,
  onText: (delta: string) => void,
): Promise<void> {
  await streamRequest("/v1/approvals", { method: "POST", body: JSON.stringify({ session_id: sessionId, decisions, stream: true }) }, (data) => {
    const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }>; error?: { message: string } };
    if (chunk.error) throw new ApiError(502, chunk.error.message);
    const content = chunk.choices?.[0]?.delta?.content;
    if (content && !content.startsWith('{"type":"progress"')) onText(content);
  });
}

/** Steering and abort of the run going on in a session (`POST /v1/sessions/{id}/steer|abort`). */
export const control = {
  steer: (sessionId: string, message: string) => request<{ steered: boolean }>(`/v1/sessions/${enc(sessionId)}/steer`, { method: "POST", body: JSON.stringify({ message }) }),
  abort: (sessionId: string) => request<{ aborted: boolean }>(`/v1/sessions/${enc(sessionId)}/abort`, { method: "POST" }),
};

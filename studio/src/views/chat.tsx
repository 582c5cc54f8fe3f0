/**
 * Chat: the agent through `POST /api/chat` with the AI SDK's `useChat` (the UI message stream, the
 * same route any useChat app uses). Tool calls show inline with their arguments and outputs; a call
 * waiting for approval has Approve / Reject buttons (the answer goes back through the same route);
 * while a run goes on, a message steers it and Abort ends it.
 */
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, getToolName, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { type FormEvent, useMemo, useState } from "react";
import { authHeaders, control } from "../api.js";
import { JsonView } from "../components/json-view.js";
import { href } from "../router.js";

type Part = UIMessage["parts"][number];

function ToolPart({ part, onDecide }: { part: Part; onDecide: (id: string, approved: boolean, reason?: string) => void }) {
  const [reason, setReason] = useState("");
  if (!isToolUIPart(part)) return null;
  const name = getToolName(part);
  const approval = (part as { approval?: { id: string; approved?: boolean; reason?: string } }).approval;
  return (
    <section className={`tool-part state-${part.state}`} aria-label={`Tool call ${name}`}>
      <p className="small">
        <span className="mono">{name}</span> <span className="pill">{part.state}</span>
      </p>
      <JsonView value={part.input} label={`Arguments of ${name}`} />
      {part.state === "output-available" && <JsonView value={part.output} label={`Output of ${name}`} />}
      {part.state === "output-error" && <p className="error">{part.errorText}</p>}
      {part.state === "approval-requested" && approval && (
        <div className="decide">
          <label htmlFor={`chat-reason-${part.toolCallId}`}>Reason (sent with a rejection)</label>
          <input id={`chat-reason-${part.toolCallId}`} value={reason} onChange={(event) => setReason(event.target.value)} />
          <div className="buttons">
            <button type="button" className="approve" onClick={() => onDecide(approval.id, true)}>
              Approve
            </button>
            <button type="button" className="reject" onClick={() => onDecide(approval.id, false, reason || undefined)}>
              Reject
            </button>
          </div>
        </div>
      )}
      {part.state === "approval-responded" && <p className="small muted">{approval?.approved ? "approved" : "rejected"}, the run goes on…</p>}
    </section>
  );
}

export function ChatView({ sessionId }: { sessionId: string }) {
  const transport = useMemo(() => new DefaultChatTransport({ api: "/api/chat", headers: () => authHeaders() }), []);
  const { messages, sendMessage, status, error, addToolApprovalResponse, stop } = useChat({
    id: sessionId,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  const [notice, setNotice] = useState<string>();
  const busy = status === "submitted" || status === "streaming";
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const text = input.trim();
    if (!text) return;
    setInput("");
    if (busy) {
      try {
        await control.steer(sessionId, text);
        setNotice(`steered: ${text}`);
      } catch (failure) {
        setNotice((failure as Error).message);
      }
      return;
    }
    setNotice(undefined);
    void sendMessage({ text });
  };
  const abort = async () => {
    try {
      await control.abort(sessionId);
      setNotice("aborted");
    } catch (failure) {
      setNotice((failure as Error).message);
    }
    void stop();
  };
  return (
    <main className="page chat-view" aria-label="Chat">
      <header className="chat-head">
        <h2>Chat</h2>
        <p className="small muted">
          session <span className="mono">{sessionId}</span> · <a href={href("runs", sessionId)}>timeline</a> · <a href={href("chat", `studio-${Date.now().toString(36)}`)}>new chat</a>
        </p>
      </header>
      <ol className="messages" aria-live="polite" aria-label="Messages">
        {messages.map((message) => (
          <li key={message.id} className={`message message-${message.role}`}>
            <span className="visually-hidden">{message.role}:</span>
            {message.parts.map((part, index) =>
              part.type === "text" ? (
                // biome-ignore lint/suspicious/noArrayIndexKey: a message's parts only grow at the end
                <p key={`${message.id}-${index}`} className="prewrap">
                  {part.text}
                </p>
              ) : isToolUIPart(part) ? (
                <ToolPart key={part.toolCallId} part={part} onDecide={(id, approved, reason) => void addToolApprovalResponse({ id, approved, reason })} />
              ) : null,
            )}
          </li>
        ))}
      </ol>
      {error && (
        <p className="error" role="alert">
          {error.message}
        </p>
      )}
      {notice && <p className="small muted">{notice}</p>}
      <form className="composer" onSubmit={submit}>
        <label htmlFor="chat-input" className="visually-hidden">
          {busy ? "Steer the running run" : "Message"}
        </label>
        <input id="chat-input" value={input} onChange={(event) => setInput(event.target.value)} placeholder={busy ? "Steer the running run…" : "Message the agent…"} autoComplete="off" />
        <button type="submit">{busy ? "Steer" : "Send"}</button>
        {busy && (
          <button type="button" className="reject" onClick={() => void abort()}>
            Abort
          </button>
        )}
      </form>
    </main>
  );
}

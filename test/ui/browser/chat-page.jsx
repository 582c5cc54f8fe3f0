// The page of the browser test: a plain useChat page against agentloop serve's /api/chat, as a
// user would write it (the README's example). Built by the test with esbuild; no CDN, no inline script.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useState } from "react";
import { createRoot } from "react-dom/client";

function ToolPart({ part, onApprove }) {
  const name = part.type.slice("tool-".length);
  return (
    <li data-testid="tool" data-tool={name} data-state={part.state} data-call={part.toolCallId}>
      {name}({JSON.stringify(part.input)})
      {part.state === "output-available" && <span data-testid="output"> → {String(part.output)}</span>}
      {part.state === "output-error" && <span data-testid="output"> ✗ {part.errorText}</span>}
      {part.state === "output-denied" && <span data-testid="output"> denied</span>}
      {part.state === "approval-requested" && (
        <button type="button" data-testid="approve" onClick={() => onApprove(part.approval.id)}>
          Approve
        </button>
      )}
    </li>
  );
}

function Chat() {
  const [input, setInput] = useState("");
  const { messages, sendMessage, addToolApprovalResponse, status } = useChat({
    id: "browser-chat",
    resume: true,
    transport: new DefaultChatTransport({ api: "/api/chat" }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  return (
    <main data-status={status}>
      {messages.map((message) => (
        <section key={message.id} data-testid={`message-${message.role}`}>
          <ul>
            {message.parts.map((part, index) =>
              part.type.startsWith("tool-") ? (
                <ToolPart key={part.toolCallId} part={part} onApprove={(id) => addToolApprovalResponse({ id, approved: true })} />
              ) : part.type === "text" ? (
                // biome-ignore lint/suspicious/noArrayIndexKey: a message's parts only grow, so a text part keeps its index
                <li key={`text-${index}`} data-testid="text">
                  {part.text}
                </li>
              ) : null,
            )}
          </ul>
        </section>
      ))}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          sendMessage({ text: input });
          setInput("");
        }}
      >
        <input data-testid="input" value={input} onChange={(event) => setInput(event.target.value)} />
        <button type="submit" data-testid="send">
          Send
        </button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);

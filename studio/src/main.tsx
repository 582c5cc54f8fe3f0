/** The studio's shell: the key prompt (when the server has AGENT_API_KEY), the navigation, one view at a time. */
import { StrictMode, useCallback, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { ApiError, type AgentInfo, api, keyStore } from "./api.js";
import { KeyPrompt } from "./components/key-prompt.js";
import { href, usePoll, useRoute } from "./router.js";
import { AgentView } from "./views/agent.js";
import { ApprovalsView } from "./views/approvals.js";
import { ChatView } from "./views/chat.js";
import { DurableView } from "./views/durable.js";
import { RunsView } from "./views/runs.js";
import "./studio.css";

type Access = { state: "checking" } | { state: "key"; refused: boolean } | { state: "open"; agent: AgentInfo } | { state: "error"; message: string };

function Nav({ current, agent, approvals }: { current: string; agent: AgentInfo; approvals: number }) {
  const durable = agent.settings.durable !== false;
  const items: Array<[string, string]> = [
    ["runs", "Runs"],
    ["approvals", approvals > 0 ? `Approvals (${approvals})` : "Approvals"],
    ["chat", "Chat"],
    ["agent", "Agent"],
    ...(durable ? ([["durable", "Durable runs"]] as Array<[string, string]>) : []),
  ];
  return (
    <header className="top">
      <a className="brand" href={href("runs")}>
        agentloop <span>studio</span>
      </a>
      <nav aria-label="Views">
        {items.map(([id, label]) => (
          <a key={id} href={href(id)} className={current === id ? "active" : undefined} aria-current={current === id ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      <span className={`agent-state pill pill-${agent.ready.status === "ready" ? "ok" : "bad"}`} title={`agent ${agent.name}: ${agent.ready.status}`}>
        {agent.name} · {agent.ready.status}
      </span>
    </header>
  );
}

function Studio({ agent }: { agent: AgentInfo }) {
  const route = useRoute();
  const [view = "runs", first, second] = route;
  const [approvals, setApprovals] = useState(0);
  usePoll(
    async () => {
      try {
        setApprovals((await api.approvals()).total);
      } catch {}
    },
    2000,
    [],
  );
  useEffect(() => {
    if (view === "chat" && !first) location.replace(href("chat", `studio-${Date.now().toString(36)}`));
  }, [view, first]);
  return (
    <>
      <a className="skip" href="#content">
        Skip to content
      </a>
      <Nav current={view} agent={agent} approvals={approvals} />
      <div id="content" className="content">
        {view === "runs" && <RunsView sessionId={first} runId={second} />}
        {view === "approvals" && <ApprovalsView />}
        {view === "chat" && first && <ChatView key={first} sessionId={first} />}
        {view === "agent" && <AgentView />}
        {view === "durable" && <DurableView enabled={agent.settings.durable !== false} />}
      </div>
    </>
  );
}

function App() {
  const [access, setAccess] = useState<Access>({ state: "checking" });
  const check = useCallback(async (typed: boolean) => {
    try {
      setAccess({ state: "open", agent: await api.agent() });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        keyStore.clear();
        setAccess({ state: "key", refused: typed });
      } else setAccess({ state: "error", message: (error as Error).message });
    }
  }, []);
  useEffect(() => {
    void check(false);
  }, [check]);
  if (access.state === "checking") return <p className="pad muted">Connecting…</p>;
  if (access.state === "error")
    return (
      <p className="pad error" role="alert">
        The server did not answer: {access.message}
      </p>
    );
  if (access.state === "key")
    return (
      <KeyPrompt
        refused={access.refused}
        onKey={(key) => {
          keyStore.set(key);
          void check(true);
        }}
      />
    );
  return <Studio agent={access.agent} />;
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

/** Agent: its card, tools, MCP servers and peers with their live state (`/ready`), and its settings (secrets redacted). */
import { useState } from "react";
import { type AgentInfo, api } from "../api.js";
import { JsonView } from "../components/json-view.js";
import { usePoll } from "../router.js";

const stateClass = (state: string) => (state === "connected" || state === "reachable" || state === "ready" ? "ok" : state === "starting" ? "running" : "bad");

export function AgentView() {
  const [agent, setAgent] = useState<AgentInfo>();
  const [error, setError] = useState<string>();
  usePoll(
    async () => {
      try {
        setAgent(await api.agent());
        setError(undefined);
      } catch (failure) {
        setError((failure as Error).message);
      }
    },
    3000,
    [],
  );
  if (!agent) return <main className="page">{error ? <p className="error">{error}</p> : <p className="muted">Loading…</p>}</main>;
  return (
    <main className="page agent-view" aria-label="Agent">
      <header>
        <h2>
          {agent.name} <span className={`pill pill-${stateClass(agent.ready.status)}`}>{agent.ready.status}</span>
        </h2>
        <p>{agent.description}</p>
      </header>
      <div className="grid">
        <section className="card" aria-label="Tools">
          <h3>Tools ({agent.tools.length})</h3>
          <ul className="plain">
            {agent.tools.map((tool) => (
              <li key={tool.name}>
                <details>
                  <summary>
                    <span className="mono">{tool.name}</span> <span className="muted small">{tool.description}</span>
                  </summary>
                  <JsonView value={tool.inputSchema} label={`Schema of ${tool.name}`} />
                </details>
              </li>
            ))}
          </ul>
        </section>
        <section className="card" aria-label="MCP servers">
          <h3>MCP servers ({agent.mcpServers.length})</h3>
          {agent.mcpServers.length === 0 && <p className="muted">None.</p>}
          <ul className="plain">
            {agent.mcpServers.map((server) => (
              <li key={server.name}>
                <span className={`pill pill-${stateClass(server.state)}`}>{server.state}</span> <strong>{server.name}</strong>{" "}
                <span className="mono small muted">{server.url ?? [server.command, ...(server.args ?? [])].join(" ")}</span>
                {server.reason && <p className="small error">{server.reason}</p>}
              </li>
            ))}
          </ul>
          <h3>Sub-agents and peers ({agent.subAgents.length})</h3>
          {agent.subAgents.length === 0 && <p className="muted">None.</p>}
          <ul className="plain">
            {agent.subAgents.map((peer) => (
              <li key={peer.name}>
                <span className={`pill pill-${stateClass(peer.state)}`}>{peer.state}</span> <strong>{peer.name}</strong> <span className="mono small muted">{peer.url}</span> ({peer.protocol})
              </li>
            ))}
          </ul>
        </section>
        <section className="card" aria-label="Settings">
          <h3>Settings in force</h3>
          <JsonView value={agent.settings} label="Settings" />
        </section>
        <section className="card" aria-label="Agent card">
          <h3>Agent card</h3>
          <JsonView value={agent.card} label="Agent card" />
        </section>
      </div>
    </main>
  );
}

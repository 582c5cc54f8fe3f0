/** Asks for the server's AGENT_API_KEY once per tab (kept in sessionStorage, never in a URL). */
import { type FormEvent, useState } from "react";

export function KeyPrompt({ refused, onKey }: { refused: boolean; onKey: (key: string) => void }) {
  const [key, setKey] = useState("");
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (key.trim()) onKey(key.trim());
  };
  return (
    <main className="key-prompt">
      <form onSubmit={submit} className="card">
        <h1>agentloop studio</h1>
        <p>This server needs its API key (AGENT_API_KEY). It is kept for this tab only.</p>
        <label htmlFor="api-key">API key</label>
        <input id="api-key" type="password" autoComplete="off"  value={key} onChange={(event) => setKey(event.target.value)} />
        {refused && (
          <p className="error" role="alert">
            The server refused this key.
          </p>
        )}
        <button type="submit">Open the studio</button>
      </form>
    </main>
  );
}

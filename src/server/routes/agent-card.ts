/** The agent cards: A2A's at `/.well-known/agent-card.json` and `/.well-known/agent.json`, KAOS's at `/.well-known/agent`. */
import { createHash } from "node:crypto";
import { type Context, Hono } from "hono";
import { A2A_VERSION_HEADER, agentCardForVersion } from "../agent-card.js";
import type { ServerContext } from "../context.js";

/**
 * How long a client or cache may keep the A2A card without asking again (A2A 1.0 §8.6). The card
 * changes only when the tools do (an MCP server reconnects with other tools); a client that asks
 * again after this sends `If-None-Match` and gets a bodiless 304 while nothing changed.
 */
export const AGENT_CARD_MAX_AGE_SECONDS = 300;

/** One served card body with its validators: the ETag (a hash of the body) and when that body was first served. */
interface CardVersion {
  etag: string;
  lastModified: string;
}

/** Whether an `If-None-Match` list names this ETag (weak comparison, as for a GET; `*` matches any). */
function etagMatches(ifNoneMatch: string, etag: string): boolean {
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return ifNoneMatch.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}

export function agentCardRoutes(server: ServerContext): Hono {
  const app = new Hono();
  // The card last served for each version (1.0, or 1.0 with the 0.3 fields) and since when: the
  // Last-Modified moves when that version's card changes (the tools changed), and only then.
  const current = new Map<string, CardVersion>();
  const versionOf = (variant: string, body: string): CardVersion => {
    const etag = `W/"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
    let version = current.get(variant);
    if (version?.etag !== etag) {
      // HTTP dates count whole seconds: a card that changes within its first second still gets a later date.
      const previous = version ? Date.parse(version.lastModified) : 0;
      version = { etag, lastModified: new Date(Math.max(Date.now(), previous + 1000)).toUTCString() };
      current.set(variant, version);
    }
    return version;
  };

  // The card lists the tools, so it waits for the MCP servers (bounded by the readiness timeout).
  const cardRoute = (unnamed: "1.0" | "0.3") => async (c: Context) => {
    await server.connecting;
    const requested = c.req.header(A2A_VERSION_HEADER) ?? c.req.query(A2A_VERSION_HEADER);
    const card = agentCardForVersion(server.card(), requested, unnamed);
    const body = JSON.stringify(card);
    const { etag, lastModified } = versionOf("url" in card ? "0.3" : "1.0", body);
    // Behind AGENT_API_KEY the card is the caller's to keep, not a shared cache's.
    const scope = server.settings.apiKey === undefined ? "public" : "private";
    const headers = { vary: A2A_VERSION_HEADER, "cache-control": `${scope}, max-age=${AGENT_CARD_MAX_AGE_SECONDS}`, etag, "last-modified": lastModified };
    const ifNoneMatch = c.req.header("if-none-match");
    const ifModifiedSince = c.req.header("if-modified-since");
    const unchanged =
      ifNoneMatch !== undefined ? etagMatches(ifNoneMatch, etag) : ifModifiedSince !== undefined && Date.parse(ifModifiedSince) >= Date.parse(lastModified);
    if (unchanged) return c.body(null, 304, headers);
    return c.body(body, 200, { ...headers, "content-type": "application/json" });
  };
  app.get("/.well-known/agent-card.json", cardRoute(server.settings.a2aCardDefaultVersion));
  // The location before A2A 0.3 (0.2.x clients; the 0.3 TCK's fallback): those clients name no version.
  app.get("/.well-known/agent.json", cardRoute("0.3"));
  // Where KAOS's RemoteAgent looks for a peer's card (no extension): KAOS's own card shape.
  app.get("/.well-known/agent", async (c) => {
    await server.connecting;
    return c.json(server.kaosCard());
  });
  return app;
}

/**
 * The studio page (`/studio`): the built assets (dist/studio, `npm run build`) served with a
 * Content-Security-Policy that allows only this origin's own scripts and styles (no inline script,
 * no CDN). The page holds no data: it asks the API routes for everything with the bearer key the
 * person typed (kept in the tab's sessionStorage), so the assets themselves need no key.
 * Off with `AGENT_STUDIO=false` (file: `studio: false`).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Context, Hono } from "hono";
import type { ServerContext } from "../context.js";
import { errorResponse } from "../context.js";
import { HttpError, notFound } from "../http-errors.js";

export const STUDIO_PATH = "/studio";

export const STUDIO_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json",
};

/**
 * Where the built page is: `AGENTLOOP_STUDIO_ASSETS` (the test runner's fresh build), else
 * `dist/studio` of the package this module belongs to (found from this file, source or built).
 */
export function studioAssetsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AGENTLOOP_STUDIO_ASSETS) return resolve(env.AGENTLOOP_STUDIO_ASSETS);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 6; depth++) {
    if (existsSync(join(dir, "package.json"))) return join(dir, "dist", "studio");
    dir = dirname(dir);
  }
  return join(process.cwd(), "dist", "studio");
}

export function studioRoutes(server: ServerContext, assets = studioAssetsDir()): Hono {
  const app = new Hono();
  const cache = new Map<string, Buffer>();
  const file = (name: string): Buffer | undefined => {
    let body = cache.get(name);
    if (body === undefined) {
      const path = join(assets, name);
      if (!existsSync(path)) return undefined;
      body = readFileSync(path);
      cache.set(name, body);
    }
    return body;
  };
  const send = (c: Context, name: string) => {
    if (!server.settings.studio) return errorResponse(c, notFound(`no route ${c.req.method} ${c.req.path} (the studio is off: AGENT_STUDIO=false)`, "unknown_route"));
    const body = file(name);
    if (!body) {
      if (name === "index.html") return errorResponse(c, new HttpError(503, `the studio page is not built (no ${join(assets, name)}): run npm run build`, "server_error", "studio_not_built"));
      return errorResponse(c, notFound(`no studio asset ${name}`, "unknown_route"));
    }
    const type = TYPES[name.slice(name.lastIndexOf("."))] ?? "application/octet-stream";
    return new Response(new Uint8Array(body), {
      headers: {
        "content-type": type,
        "content-security-policy": STUDIO_CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-cache",
      },
    });
  };
  app.get(STUDIO_PATH, (c) => send(c, "index.html"));
  app.get(`${STUDIO_PATH}/`, (c) => send(c, "index.html"));
  app.get(`${STUDIO_PATH}/assets/:name`, (c) => {
    const name = c.req.param("name");
    if (!/^[A-Za-z0-9_.-]+$/.test(name) || name.startsWith(".")) return errorResponse(c, notFound(`no studio asset ${name}`, "unknown_route"));
    return send(c, `assets/${name}`);
  });
  return app;
}

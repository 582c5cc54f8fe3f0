// The browser test: a React page using @ai-sdk/react's useChat (test/ui/browser/chat-page.jsx,
// built here with esbuild) served beside agentloop serve's routes, in headless Chromium driven by
// playwright-core. The user types, sees a wave's two tool calls with their outputs and the streamed
// answer, approves a call from a button, and reloads mid-answer to see the stream resume.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { type Browser, chromium, type Page } from "playwright-core";
import { ScriptedModel } from "../../src/index.js";
import { startTestServer, type TestServer } from "../server/helpers.js";
import { echo, writeFile } from "./scenarios.js";

const CHROMIUM = process.env.AGENTLOOP_CHROMIUM ?? "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.log(`# browser tests skipped: no Chromium at ${CHROMIUM} (set AGENTLOOP_CHROMIUM or install Debian's chromium)`);

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });
const LONG_ANSWER = Array.from({ length: 150 }, (_, index) => `w${index}`).join(" ");

/** The page's bundle: React, useChat and the page, for the browser. */
async function bundle(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("./browser/chat-page.jsx", import.meta.url))],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    minify: true,
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  return result.outputFiles[0].text;
}

/** Serves the page and passes every other request through to the agent server (one origin, as a deployment would). */
async function pageServer(script: string, agentUrl: string): Promise<{ server: Server; url: string }> {
  const target = new URL(agentUrl);
  const html = '<!doctype html><html><head><meta charset="utf-8"><title>chat</title></head><body><div id="root"></div><script type="module" src="/app.js"></script></body></html>';
  const server = createServer((incoming, outgoing) => {
    if (incoming.url === "/" || incoming.url?.startsWith("/?")) return void outgoing.writeHead(200, { "content-type": "text/html" }).end(html);
    if (incoming.url === "/app.js") return void outgoing.writeHead(200, { "content-type": "text/javascript" }).end(script);
    const upstream = httpRequest({ host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (response) => {
      outgoing.writeHead(response.statusCode ?? 502, response.headers);
      response.pipe(outgoing);
    });
    upstream.on("error", () => outgoing.destroy());
    outgoing.on("close", () => upstream.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("useChat in headless Chromium against agentloop serve", { skip: haveChromium ? false : "no Chromium" }, () => {
  let agent: TestServer;
  let page: { server: Server; url: string };
  let browser: Browser;
  let tab: Page;
  before(async () => {
    const script = [calls(["call_a", "echo", { text: "alpha" }], ["call_b", "echo", { text: "beta" }]), "Both echoed: alpha and beta.", calls(["call_w", "write_file", { path: "a.txt" }]), "Wrote a.txt.", LONG_ANSWER];
    agent = await startTestServer({ AGENT_NAME: "browser" }, { build: { model: new ScriptedModel(script, { continueAcrossRuns: true, chunkDelayMs: 15 }), tools: [echo, writeFile] } });
    const [code] = await Promise.all([bundle()]);
    page = await pageServer(code, agent.url);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    tab = await browser.newPage();
    const errors: string[] = [];
    tab.on("pageerror", (error) => errors.push(error.message));
    await tab.goto(page.url);
    await tab.getByTestId("input").waitFor();
    assert.deepEqual(errors, []);
  });
  after(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.server.close(resolve));
    await agent?.close();
  });

  async function send(text: string): Promise<void> {
    await tab.getByTestId("input").fill(text);
    await tab.getByTestId("send").click();
  }
  const lastAssistant = () => tab.getByTestId("message-assistant").last();

  it("the user types; the wave's two tool calls show with their outputs, then the streamed answer", async () => {
    await send("echo alpha and beta");
    await lastAssistant().getByTestId("text").filter({ hasText: "Both echoed: alpha and beta." }).waitFor();
    const tools = lastAssistant().getByTestId("tool");
    assert.equal(await tools.count(), 2);
    assert.deepEqual(await tools.evaluateAll((items) => items.map((item) => [item.getAttribute("data-tool"), item.getAttribute("data-state")])), [
      ["echo", "output-available"],
      ["echo", "output-available"],
    ]);
    assert.deepEqual(await lastAssistant().getByTestId("output").allTextContents(), [" → echo: alpha", " → echo: beta"]);
  });

  it("a call that needs approval shows a button; approving it runs the call and the answer streams", async () => {
    await send("write a.txt");
    const approve = lastAssistant().getByTestId("approve");
    await approve.waitFor();
    await approve.click();
    await lastAssistant().getByTestId("text").filter({ hasText: "Wrote a.txt." }).waitFor();
    assert.equal(await lastAssistant().locator('[data-call="call_w"]').getAttribute("data-state"), "output-available");
    assert.equal(await lastAssistant().getByTestId("output").textContent(), " → wrote a.txt");
  });

  it("a reload mid-answer resumes the stream (useChat resume: true, GET /api/chat/{id}/stream) to its end", async () => {
    await send("say many words");
    await lastAssistant().getByTestId("text").filter({ hasText: "w5 " }).waitFor();
    const before = (await lastAssistant().getByTestId("text").textContent()) ?? "";
    assert.ok(!before.includes("w149"), "the answer was still streaming at the reload");
    await tab.reload();
    await tab.getByTestId("message-assistant").getByTestId("text").filter({ hasText: "w149" }).waitFor({ timeout: 20_000 });
    const text = await tab.getByTestId("message-assistant").last().getByTestId("text").textContent();
    assert.equal(text, LONG_ANSWER);
  });
});

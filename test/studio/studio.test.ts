// The studio in a real browser (Debian's chromium driven by playwright-core) against a real
// `agentloop serve` child process with a scripted model and a real MCP server (server-everything
// over stdio), its embedded store shared with a CLI `agentloop run --session`. Saves a screenshot
// of each view (into docs/studio/ with AGENTLOOP_SCREENSHOTS=1). Without chromium the browser tests are skipped (one line says so).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { type CliProcess, cleanEnv, runCli, spawnCli } from "../cli/helpers.js";
import { everythingServerPath } from "../mcp/helpers.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM) console.log(`# studio browser tests skipped: no chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);
// The screenshots go to docs/studio/ when AGENTLOOP_SCREENSHOTS=1 (to refresh the docs' pictures);
// otherwise to a temporary folder, removed at the end, so a test run leaves the working tree and /tmp as they were.
const SHOTS = process.env.AGENTLOOP_SCREENSHOTS === "1" ? fileURLToPath(new URL("../../docs/studio/", import.meta.url)) : mkdtempSync(join(tmpdir(), "agentloop-studio-shots-"));
const KEY = "studio-test-key";

const calls = (...list: Array<{ id: string; name: string; arguments: Record<string, unknown> }>) => JSON.stringify({ tool_calls: list });
const ANSWER = "Both operations finished; the echo said: hello from the inbox";
// Each run reads the script from its start (a resumed run goes on after the turns it used): a
// wave of two parallel calls of the MCP server's long-running tool (~0.6 s each), then a call that
// needs a person's approval, then the answer.
const SCRIPT = [
  calls(
    { id: "slow_a", name: "trigger-long-running-operation", arguments: { duration: 0.6, steps: 2 } },
    { id: "slow_b", name: "trigger-long-running-operation", arguments: { duration: 0.6, steps: 2 } },
  ),
  calls({ id: "echo_1", name: "echo", arguments: { message: "hello from the inbox" } }),
  ANSWER,
];

let folder: string;
let server: CliProcess | undefined;
let url = "";
let browser: Browser | undefined;

before(async () => {
  if (!HAVE_CHROMIUM) return;
  // The browser starts while the server does (each takes seconds on a loaded machine). With a renderer
  // process limit of 1, Chromium starts fewer processes (13–15 instead of 20 over this file) and spends
  // about 0.6 s less CPU (0.94×, bench/chromium-cpu.mjs; bench/FINDINGS.md, session 25); the pages do
  // the same (each test still has a context of its own).
  const launching = import("playwright-core").then(({ chromium }) => chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--renderer-process-limit=1"] }));
  try {
    folder = await mkdtemp(join(tmpdir(), "agentloop-studio-"));
    await writeFile(
      join(folder, "agent.yaml"),
      [
        "name: studio-agent",
        "description: An agent the studio tests look at",
        "mcpServers:",
        "  - name: everything",
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(everythingServerPath)}, stdio]`,
        "approvals:",
        '  tools: ["echo"]',
        "memory:",
        "  maxSessionEvents: 20000",
      ].join("\n"),
    );
    server = spawnCli(["serve", "--agent", "agent.yaml", "--port", "0", "--host", "127.0.0.1", "--json"], { ...cleanEnv(), AGENT_API_KEY: KEY, DEBUG_MOCK_RESPONSES: JSON.stringify(SCRIPT) }, folder);
    [, url] = await server.waitFor(/"event":"listening".*"url":"([^"]+)"/, "stdout", 60_000);
    await server.waitFor(/"event":"ready"/, "stdout", 60_000);
  } finally {
    // after() closes it, even when the server did not start.
    browser = await launching;
  }
});

after(async () => {
  await browser?.close();
  server?.child.kill("SIGKILL");
  if (folder) await rm(folder, { recursive: true, force: true });
  if (process.env.AGENTLOOP_SCREENSHOTS !== "1") await rm(SHOTS, { recursive: true, force: true });
});

/** A new tab at `hash`, past the key prompt. */
async function open(hash: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const page = await browser!.newPage({ viewport });
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error" && /Content.Security.Policy|Refused/.test(message.text())) problems.push(message.text());
  });
  (page as Page & { problems: string[] }).problems = problems;
  await page.goto(`${url}/studio${hash}`);
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Open the studio" }).click();
  await page.getByRole("navigation", { name: "Views" }).waitFor();
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });

async function api(path: string, init: RequestInit = {}) {
  return fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", ...(init.headers as Record<string, string>) } });
}

describe("agentloop studio in a browser", { skip: !HAVE_CHROMIUM && "no chromium" }, () => {
  it("serves the page with a CSP forbidding inline scripts; the key prompt refuses a wrong key and keeps the right one for the tab only", async () => {
    const response = await fetch(`${url}/studio`);
    assert.equal(response.status, 200);
    const csp = response.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.doesNotMatch(await response.text(), /<script>(?!<)/, "no inline script");
    assert.equal((await fetch(`${url}/v1/agent`)).status, 401, "the data needs the key");

    const page = await browser!.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${url}/studio`);
    await page.getByLabel("API key").fill("wrong-key");
    await page.getByRole("button", { name: "Open the studio" }).click();
    await page.getByRole("alert").filter({ hasText: "refused this key" }).waitFor();
    await shot(page, "key-prompt");
    await page.getByLabel("API key").fill(KEY);
    await page.getByRole("button", { name: "Open the studio" }).click();
    await page.getByRole("navigation", { name: "Views" }).waitFor();
    assert.equal(await page.evaluate('sessionStorage.getItem("agentloop.studio.key")'), KEY);
    assert.equal(await page.evaluate("localStorage.length"), 0);
    assert.ok(!page.url().includes(KEY), "never in the URL");
    await page.close();
  });

  it("a chat's wave of two parallel MCP calls shows on the timeline as two overlapping bars with their durations", async () => {
    const page = await open("#/chat/wave-chat");
    await page.getByLabel("Message", { exact: true }).fill("Run two slow operations");
    await page.getByRole("button", { name: "Send" }).click();
    // The echo needs approval: Approve / Reject inline, answered through useChat's approval response.
    const echo = page.getByRole("region", { name: "Tool call echo" });
    await echo.getByRole("button", { name: "Approve" }).waitFor({ timeout: 30_000 });
    assert.equal(await page.getByRole("region", { name: /Tool call trigger-long-running-operation/ }).count(), 2, "both calls inline");
    assert.match((await page.getByRole("region", { name: /Tool call trigger-long-running-operation/ }).first().textContent()) ?? "", /duration[\s\S]*Long running operation completed/i);
    await shot(page, "chat");
    await echo.getByRole("button", { name: "Approve" }).click();
    await page.getByText(ANSWER).waitFor({ timeout: 30_000 });

    await page.goto(`${url}/studio#/runs/wave-chat`);
    const bars = page.locator('.bar[data-bar-kind="tool"][aria-label^="trigger-long-running-operation"]');
    await bars.nth(1).waitFor({ timeout: 15_000 });
    assert.equal(await bars.count(), 2);
    const spans = await bars.evaluateAll((elements) => elements.map((element) => ({ start: Number(element.getAttribute("data-start")), end: Number(element.getAttribute("data-end")), box: element.getBoundingClientRect().toJSON(), label: element.getAttribute("aria-label") })));
    const [a, b] = spans;
    assert.ok(a.start < b.end && b.start < a.end, `the two calls overlap in time: ${JSON.stringify(spans)}`);
    assert.ok(a.box.left < b.box.right && b.box.left < a.box.right, "and on screen");
    assert.notEqual(a.box.top, b.box.top, "on rows of their own");
    for (const span of spans) assert.match(span.label ?? "", /trigger-long-running-operation: (\d{3} ms|\d\.\d\d s).*wave 1/);
    await page.locator(".run-head .pill", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.locator('.bar[data-bar-kind="model"]').count(), 3, "three model calls: the wave's, the echo's, the answer's");
    // Keyboard: a bar is a button; Enter on it shows its call.
    await bars.nth(1).focus();
    await page.keyboard.press("Enter");
    const detail = page.getByRole("complementary", { name: "Selected call" });
    await detail.locator("dd", { hasText: /^slow_[ab]$/ }).waitFor();
    await bars.first().click();
    await detail.getByText("Span id").waitFor();
    assert.match((await detail.textContent()) ?? "", /duration[\s\S]*Long running operation completed/i);
    await shot(page, "runs");
    assert.deepEqual((page as Page & { problems?: string[] }).problems ?? [], []);
    await page.close();
  });

  it("an approval answered from the inbox: the tool runs once, the answer streams in, a second decision is refused", async () => {
    const response = await api("/v1/chat/completions", { method: "POST", body: JSON.stringify({ session_id: "inbox-1", messages: [{ role: "user", content: "Echo something" }] }) });
    const completion = (await response.json()) as { choices: Array<{ finish_reason: string }> };
    assert.equal(completion.choices[0].finish_reason, "approval_required", JSON.stringify(completion) + JSON.stringify(await (await api("/v1/sessions/inbox-1/events")).json()));

    const page = await open("#/approvals");
    const item = page.getByRole("listitem", { name: "Approval for echo" });
    await item.waitFor({ timeout: 10_000 });
    assert.match((await item.textContent()) ?? "", /studio-agent[\s\S]*hello from the inbox/);
    await shot(page, "approvals");
    await item.getByRole("button", { name: "Approve" }).click();
    await item.getByRole("region", { name: "Answer" }).getByText(ANSWER).waitFor({ timeout: 15_000 });
    assert.equal(await item.getByRole("button", { name: "Approve" }).isDisabled(), true, "decided once: the buttons are off");
    assert.equal(await item.getByRole("button", { name: "Reject" }).isDisabled(), true);

    const events = (await (await api("/v1/sessions/inbox-1/events")).json()) as { events: Array<{ event_type: string; metadata: { tool_call_id?: string } }> };
    assert.equal(events.events.filter((event) => event.event_type === "tool_result" && event.metadata.tool_call_id === "echo_1").length, 1, "the tool ran once");
    const again = await api("/v1/approvals", { method: "POST", body: JSON.stringify({ session_id: "inbox-1", decisions: { echo_1: { approve: true } } }) });
    assert.ok(again.status === 404 || again.status === 409, `a second decision is refused (${again.status})`);
    assert.equal(((await (await api("/v1/approvals")).json()) as { total: number }).total, 0, "nothing pending any more");
    await page.close();
  });

  it("a run followed live from a second tab while a CLI agentloop run --session writes to the same store", async () => {
    const first = await open("#/runs");
    const second = await open("#/runs/live-1");
    // The CLI's run: a slow MCP call (4 s), then an answer. The tab polls every 400 ms, but on a loaded
    // machine a poll and its redraw took longer than a 1.5 s call: the call's start and end came in one
    // poll, the running bar never showed, and the wait below ran out (seen at load 20).
    const script = [calls({ id: "live_call", name: "trigger-long-running-operation", arguments: { duration: 4, steps: 4 } }), "Live run done."];
    const cli = runCli(["run", "--agent", "agent.yaml", "--session", "live-1", "--mock", JSON.stringify(script), "go slowly"], cleanEnv(), "", folder);
    // While it runs: the second tab shows the running call growing.
    const running = second.locator(".bar.status-running");
    await running.waitFor({ timeout: 30_000 });
    // The running call's bar grows on screen while no event arrives (the run is in its tool call), and
    // meanwhile the run's pill says RUNNING: both seen in one look at the page (looked at one after
    // the other, the call could end between them on a loaded machine).
    const width = (await running.boundingBox())!.width;
    // (a function, not a string: the page's CSP forbids eval)
    type Element = { getBoundingClientRect(): { width: number }; textContent: string | null; checkVisibility(): boolean };
    type Window = { document: { querySelector(selector: string): Element | null; querySelectorAll(selector: string): Iterable<Element> } };
    await second.waitForFunction((before) => {
      const { document } = globalThis as unknown as Window;
      const grown = (document.querySelector(".bar.status-running")?.getBoundingClientRect().width ?? 0) > before;
      return grown && [...document.querySelectorAll(".pill")].some((pill) => pill.textContent?.includes("RUNNING") && pill.checkVisibility());
    }, width + 5);
    const result = await cli;
    assert.equal(result.code, 0, result.stderr);
    await second.locator(".run-head .pill", { hasText: "COMPLETED" }).waitFor({ timeout: 10_000 });
    await second.getByText("Live run done.").first().waitFor();
    await first.getByRole("link", { name: /live-1/ }).waitFor({ timeout: 10_000 });
    await first.close();
    await second.close();
  });

  it("the agent view shows the tools, the MCP server's live state and the settings with the key redacted", async () => {
    const page = await open("#/agent");
    await page.getByRole("region", { name: "MCP servers" }).getByText("connected").waitFor();
    const settings = (await page.getByRole("region", { name: "Settings" }).textContent()) ?? "";
    assert.match(settings, /\[redacted\]/);
    assert.ok(!settings.includes(KEY), "the key never shows");
    assert.match((await page.getByRole("region", { name: "Tools" }).textContent()) ?? "", /echo/);
    await shot(page, "agent");
    await page.close();
  });

  it("reads at a phone's width: the runs view shows one pane at a time", async () => {
    const page = await open("#/runs/wave-chat", { width: 390, height: 844 });
    await page.locator('.bar[data-bar-kind="tool"]').first().waitFor({ timeout: 10_000 });
    const width = (await page.evaluate("document.documentElement.scrollWidth")) as number;
    assert.ok(width <= 390, `no horizontal scroll (${width})`);
    await shot(page, "phone");
    await page.close();
  });
});

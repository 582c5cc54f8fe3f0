// A durable run cancelled from the studio page (headless chromium, a real durable `serve` replica
// on a real PostgreSQL): the page lists the running run, its Cancel button cancels it, the run
// stays CANCELLED, and Reattach streams its journal to the cancellation. Skipped without chromium (studio.test.ts says so).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { durableTestResources } from "../durable/cleanup.js";
import { postChat, readEvents, startReplica } from "../durable/serve-helpers.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const { tag, replicas, durableEnv } = durableTestResources("t_studio_durable", "dbos_studio");
let browser: Browser | undefined;
after(() => browser?.close());

test("a durable run cancelled from the studio's durable view", { skip: !existsSync(CHROMIUM) && "no chromium" }, async () => {
  // WORK_MS longer than the test: the run is in its tool call until cancelled.
  const replica = await startReplica(durableEnv(`studio-${tag}`, { WORK_MS: "60000" }));
  replicas.push(replica);
  const chat = await postChat(replica.url, "a long task", `studio-${tag}`);
  const runId = chat.headers.get("x-agentloop-run-id")!;
  let inTool!: () => void;
  const toolStarted = new Promise<void>((resolve) => (inTool = resolve));
  const reading = readEvents(chat, (event) => {
    if (event.includes("progress")) inTool();
  });
  await toolStarted;

  const { chromium } = await import("playwright-core");
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${replica.url}/studio#/durable`);
  const row = page.getByRole("row", { name: `Durable run ${runId}` });
  await row.getByText("PENDING").waitFor({ timeout: 30_000 });
  if (process.env.AGENTLOOP_SCREENSHOTS === "1") await page.screenshot({ path: join(fileURLToPath(new URL("../../docs/studio/", import.meta.url)), "durable.png") });
  await row.getByRole("button", { name: `Cancel ${runId}` }).click();
  await row.getByText("CANCELLED").waitFor({ timeout: 30_000 });
  assert.equal(await row.getByRole("button", { name: `Cancel ${runId}` }).isDisabled(), true);
  // Reattach: the run's stream from the start of its journal, ending with the cancellation.
  await row.getByRole("button", { name: `Reattach to ${runId}` }).click();
  await page.getByRole("region", { name: `Stream of ${runId}` }).getByText(`run ${runId} was cancelled`).waitFor({ timeout: 30_000 });
  const { complete, events } = await reading;
  assert.ok(complete, events.join("\n"));
  assert.match(events.at(-2) ?? "", /was cancelled/);
  const shown = (await (await fetch(`${replica.url}/v1/runs/${runId}`)).json()) as { status: string };
  assert.equal(shown.status, "CANCELLED");
});

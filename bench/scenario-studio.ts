// Scenario 9: the studio page. Its weight (the script and stylesheet, gzipped, as `npm run build`
// makes them) and the time to open a session of 10,000 events in headless chromium: from the
// navigation to `#/runs/<session>` until the session's runs are listed and the newest run's
// timeline is drawn (the log read through GET /v1/sessions/{id}/events, 10,000 events a page).
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildStudio } from "../scripts/build-studio.mjs";
import { InMemoryStore, type NewMemoryEvent } from "../src/memory/index.js";
import { createAgentServer } from "../src/server/index.js";
import { benchFile } from "./child-process.js";
import { type BenchOptions, formatSpread, isMain, machineInfo, markdownTable, parseBenchOptions, publish, type ScenarioReport, spread } from "./harness.js";

const TARGET_KB = 150;
const TARGET_OPEN_MS = 1000;
const EVENTS = 10_000;
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** A session of `EVENTS` events: runs of a user message, a wave of 8 tool calls and an answer (20 events each). */
function session(): NewMemoryEvent[] {
  const events: NewMemoryEvent[] = [];
  const start = Date.now() - 3_600_000;
  for (let run = 0; events.length < EVENTS; run++) {
    const t = start + run * 2000;
    const meta = { run_id: `run_${run}`, agent: "bench" };
    const model = (turn: number, at: number) => ({ turn, started_at: new Date(at).toISOString(), duration_ms: 300, usage: { input_tokens: 100, output_tokens: 20, total_tokens: 120 }, finish_reason: "stop" });
    events.push({ event_type: "run_started", timestamp: new Date(t), content: { agent: "bench", model: "scripted" }, metadata: { ...meta, depth: 0 } });
    events.push({ event_type: "user_message", timestamp: new Date(t), content: `question ${run}`, metadata: meta });
    for (let call = 0; call < 8; call++) {
      events.push({ event_type: "tool_call", timestamp: new Date(t + 300), content: { tool: `tool_${call}`, arguments: { n: call } }, metadata: { ...meta, tool_call_id: `c${run}_${call}`, turn: 1, model_call: model(1, t) } });
    }
    for (let call = 0; call < 8; call++) {
      events.push({ event_type: "tool_result", timestamp: new Date(t + 400 + call * 50), content: { tool: `tool_${call}`, result: `result ${call} `.repeat(20) }, metadata: { ...meta, tool_call_id: `c${run}_${call}`, duration_ms: 100 + call * 50 } });
    }
    events.push({ event_type: "agent_response", timestamp: new Date(t + 1200), content: `answer ${run}`, metadata: { ...meta, model_call: model(2, t + 900) } });
    events.push({ event_type: "run_ended", timestamp: new Date(t + 1200), content: { state: "COMPLETED", reason: "done" }, metadata: { ...meta, usage: { totalTokens: 240 } } });
  }
  return events.slice(0, EVENTS);
}

export async function runStudioScenario(options: BenchOptions): Promise<ScenarioReport> {
  const machine = machineInfo();
  const assets = mkdtempSync(join(tmpdir(), "agentloop-bench-studio-"));
  const notes: string[] = [];
  try {
    const sizes = await buildStudio(assets, { root: benchFile("..") });
    const kb = (sizes.js + sizes.css) / 1024;
    const rows = [["page (studio.js + studio.css), gzipped", `${kb.toFixed(1)} KB`, `< ${TARGET_KB} KB`, kb < TARGET_KB ? "yes" : "**no**"]];
    const summary: ScenarioReport["summary"] = [{ scenario: "9 studio", metric: "page, KB gzipped", values: { agentloop: kb }, target: `< ${TARGET_KB}`, met: kb < TARGET_KB }];
    if (!existsSync(CHROMIUM)) {
      notes.push(`no chromium at ${CHROMIUM}: the time to open a 10,000-event session was not measured`);
    } else {
      process.env.AGENTLOOP_STUDIO_ASSETS = assets;
      const store = new InMemoryStore({ maxEventsPerSession: EVENTS * 2 });
      const events = session();
      for (let index = 0; index < events.length; index += 1000) await store.append("big", events.slice(index, index + 1000));
      const server = await createAgentServer({ env: { AGENT_NAME: "bench", DEBUG_MOCK_RESPONSES: '["x"]' }, memory: store, log: () => {} });
      const url = await server.listen(0, "127.0.0.1");
      const { chromium } = await import("playwright-core");
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const times: number[] = [];
      try {
        const repetitions = options.quick ? 2 : 5;
        for (let repetition = 0; repetition <= repetitions; repetition++) {
          const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
          // The page (cached by the browser after the first load) is loaded first: what is measured is opening the session.
          await page.goto(`${url}/studio#/runs`);
          await page.getByRole("navigation", { name: "Views" }).waitFor();
          const started = performance.now();
          await page.evaluate("location.hash = '#/runs/big'");
          await page.locator(".runs .item").first().waitFor();
          await page.locator('.bar[data-bar-kind="tool"]').nth(7).waitFor();
          const elapsed = performance.now() - started;
          if (repetition > 0) times.push(elapsed); // the first is a warm-up
          await page.close();
        }
      } finally {
        await browser.close();
        await server.close();
      }
      const open = spread(times);
      rows.push([`open a ${EVENTS.toLocaleString("en")}-event session (runs listed, newest run's timeline drawn), ms`, formatSpread(open), `< ${TARGET_OPEN_MS} ms`, open.median < TARGET_OPEN_MS ? "yes" : "**no**"]);
      summary.push({ scenario: "9 studio", metric: "open 10,000-event session, ms", values: { agentloop: open.median }, target: `< ${TARGET_OPEN_MS}`, met: open.median < TARGET_OPEN_MS });
    }
    return {
      id: "studio",
      title: "Scenario 9: the studio page (size, opening a 10,000-event session)",
      machine,
      quick: options.quick,
      details: [markdownTable(["measure", "agentloop (median, min–max)", "target", "met"], rows)],
      summary,
      notes: [...notes, "The session is 500 runs of 20 events (a wave of 8 tool calls each), read in one page of 10,000 events; lists and the timeline render only the rows in view."],
    };
  } finally {
    rmSync(assets, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runStudioScenario(options), options);
}

/**
 * `agentloop runs list|show|cancel|resume|recover`: the durable runs of a server in durable mode
 * (`DURABLE=true`), through its `/v1/runs` routes (any replica answers for all of them).
 */
import type { Command } from "commander";
import { AgentLoopError } from "../../errors.js";
import { palette } from "../render.js";

interface RunsOptions {
  url?: string;
  apiKey?: string;
  json?: boolean;
}

interface RunInfo {
  runId: string;
  status: string;
  sessionId?: string;
  input?: string;
  executorId?: string;
  createdAt: string;
  pendingApprovals?: Array<{ toolCallId: string; tool: string; arguments: unknown }>;
  steps?: Array<{ id: number; name: string; error?: string }>;
  result?: { state: string; reason: string; text: string };
}

export interface RunsIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  env?: NodeJS.ProcessEnv;
}

/** The server's base URL: `--url`, else `AGENT_URL`, else the local `AGENT_PORT` (default 8000). */
function baseUrl(options: RunsOptions, env: NodeJS.ProcessEnv): string {
  const url = options.url ?? env.AGENT_URL ?? `http://127.0.0.1:${env.AGENT_PORT || 8000}`;
  if (!/^https?:\/\//.test(url)) throw new AgentLoopError("configuration", `--url must be an http(s) URL, got "${url}"`);
  return url.replace(/\/+$/, "");
}

async function call(options: RunsOptions, env: NodeJS.ProcessEnv, method: string, path: string, body?: unknown): Promise<unknown> {
  const url = `${baseUrl(options, env)}${path}`;
  const apiKey = options.apiKey ?? env.AGENT_API_KEY;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new AgentLoopError("network", `cannot reach the server at ${url}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const message = (parsed as { error?: { message?: string } })?.error?.message ?? text;
    throw new AgentLoopError("configuration", `${method} ${path}: ${response.status} ${message}`);
  }
  return parsed;
}

function line(run: RunInfo): string {
  const state = run.result ? `${run.status} ${run.result.state}` : run.status;
  return `${run.runId}  ${state.padEnd(18)}  ${(run.sessionId ?? "-").padEnd(20)}  ${run.executorId ?? "-"}  ${run.createdAt}`;
}

export async function runsCommand(action: "list" | "show" | "cancel" | "resume" | "recover", argument: string | undefined, options: RunsOptions & { status?: string; session?: string; limit?: number }, io: RunsIO = process): Promise<number> {
  const env = io.env ?? process.env;
  /** Writes a line; 0, the exit code. */
  const out = (text: string): number => {
    io.stdout.write(`${text}\n`);
    return 0;
  };
  const c = palette(io.stdout);
  if (action === "list") {
    const query = new URLSearchParams();
    if (options.status) query.set("status", options.status);
    if (options.session) query.set("session_id", options.session);
    if (options.limit) query.set("limit", String(options.limit));
    const body = (await call(options, env, "GET", `/v1/runs${query.size ? `?${query}` : ""}`)) as { runs: RunInfo[] };
    if (options.json) return out(JSON.stringify(body));
    if (body.runs.length === 0) return out(c.dim("no durable runs"));
    for (const run of body.runs) out(line(run));
    return 0;
  }
  if (action === "recover") {
    const body = (await call(options, env, "POST", "/v1/runs/recover", { executor_id: argument })) as { recovered: string[] };
    if (options.json) return out(JSON.stringify(body));
    out(`recovered ${body.recovered.length} run(s) of executor ${argument}`);
    for (const runId of body.recovered) out(`  ${runId}`);
    return 0;
  }
  const path = `/v1/runs/${encodeURIComponent(argument!)}${action === "show" ? "" : `/${action}`}`;
  const run = (await call(options, env, action === "show" ? "GET" : "POST", path)) as RunInfo;
  if (options.json) return out(JSON.stringify(run));
  out(line(run));
  if (run.input !== undefined) out(`  input: ${run.input}`);
  if (run.result) out(`  result: ${run.result.state} (${run.result.reason}) ${run.result.text}`);
  for (const pending of run.pendingApprovals ?? []) out(`  waits for approval: ${pending.toolCallId} ${pending.tool}(${JSON.stringify(pending.arguments)})`);
  if (run.steps) out(`  steps: ${run.steps.map((step) => `${step.id}:${step.name}${step.error ? ` (error: ${step.error})` : ""}`).join(", ") || "none"}`);
  return 0;
}

export function registerRunsCommand(program: Command): void {
  const runs = program
    .command("runs")
    .description("The durable runs of a server in durable mode (DURABLE=true), through its /v1/runs routes")
    .addHelpText(
      "after",
      `
Every subcommand takes --url (default AGENT_URL, else http://127.0.0.1:$AGENT_PORT), --api-key (default AGENT_API_KEY) and --json.
A run that finished cannot be changed: cancel or resume of a succeeded run, and cancel of a failed one
(resume retries it), exit 2 with the server's 409: run "run_1234" already finished (SUCCESS): nothing to cancel.

Examples:
  $ agentloop runs list --status PENDING
  $ agentloop runs show run_1234
  $ agentloop runs cancel run_1234 && agentloop runs resume run_1234
  $ agentloop runs recover --executor agent-0 --url http://agent-1:8000   # a replica that will not come back`,
    );
  const common = (command: Command) =>
    command.option("--url <url>", "the server's base URL").option("--api-key <key>", "the server's AGENT_API_KEY").option("--json", "print the server's JSON answer");
  const act = (action: Parameters<typeof runsCommand>[0]) => async (argument: string | undefined, options: RunsOptions & Record<string, unknown>) => {
    process.exitCode = await runsCommand(action, argument, options);
  };
  common(runs.command("list").description("Durable runs, most recent first"))
    .option("--status <status>", "ENQUEUED, PENDING, SUCCESS, ERROR or CANCELLED")
    .option("--session <id>", "only this session's runs")
    .option("-n, --limit <n>", "at most n runs (default 100)", (value) => Number(value))
    .action(async (options: RunsOptions & { status?: string; session?: string; limit?: number }) => {
      process.exitCode = await runsCommand("list", undefined, options);
    });
  common(runs.command("show").description("A run: its state, steps and pending approvals").argument("<run-id>")).action(act("show"));
  common(runs.command("cancel").description("Cancel a running or queued run (it stops at its next step); a finished one: 409, exit 2").argument("<run-id>")).action(act("cancel"));
  common(runs.command("resume").description("Resume a cancelled or failed run from its last completed step; a succeeded one: 409, exit 2").argument("<run-id>")).action(act("resume"));
  common(runs.command("recover").description("Recover the unfinished runs of a replica that died and will not come back"))
    .requiredOption("--executor <id>", "the dead replica's executor id (DURABLE_EXECUTOR_ID)")
    .action(async (options: RunsOptions & { executor: string }) => {
      process.exitCode = await runsCommand("recover", options.executor, options);
    });
}

import { type Command, Option } from "commander";
import { AgentLoopError } from "../../errors.js";
import { type AgentCliOptions, addModelOptions, applyModelOptions, MCP_START_TIMEOUT_MS, takeOverMockScript } from "../agent-setup.js";
import { startTraceExport } from "../otel.js";
import { palette } from "../render.js";
import { tuneServerHeap } from "../server-heap.js";

export interface ServeCommandOptions extends Omit<AgentCliOptions, "session" | "mcp"> {
  agent?: string;
  port?: number;
  host?: string;
  json?: boolean;
  graceMs?: number;
  /** The base URL the agent cards advertise (AGENT_PUBLIC_URL). */
  publicUrl?: string;
  /** `agentloop studio`: print the studio page's URL on stdout (and refuse a server with the studio off). */
  studio?: boolean;
}

const integerOption = (name: string, minimum: number, maximum: number) => (value: string) => {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < minimum || number > maximum) {
    throw new AgentLoopError("configuration", `${name} must be an integer between ${minimum} and ${maximum}, got "${value}"`);
  }
  return number;
};

/** `agentloop serve`: the KAOS-compatible agent server until SIGTERM/SIGINT. */
export async function serveCommand(options: ServeCommandOptions, io = { stdout: process.stdout, stderr: process.stderr }): Promise<void> {
  tuneServerHeap(); // a long-running server: its old generation collected sooner (src/cli/server-heap.ts)
  const { startAgentServer } = await import("../../server/index.js");
  const colors = palette(io.stderr);
  const log = (line: string) => io.stderr.write(`${colors.dim(line)}\n`);
  // The agent file and the KAOS variables, then --model, --mock, --max-steps, --tool-call-mode on top.
  const { resolveAgentSettings } = await import("../../config/settings.js"); // loaded when serving, not for --help
  const settings = await resolveAgentSettings({ agentFile: options.agent });
  await applyModelOptions(settings, options);
  if (options.publicUrl !== undefined) {
    if (!/^https?:\/\/[^\s/]/i.test(options.publicUrl)) throw new AgentLoopError("configuration", `--public-url: must be an http(s) URL, got "${options.publicUrl}"`);
    settings.publicUrl = options.publicUrl;
  }
  takeOverMockScript(process.env);
  if (options.studio && !settings.studio) throw new AgentLoopError("configuration", "agentloop studio: the studio is off for this agent (AGENT_STUDIO=false or the file's studio: false)");
  const server = await startAgentServer({
    settings,
    readyTimeoutMs: MCP_START_TIMEOUT_MS,
    port: options.port,
    host: options.host,
    shutdownGraceMs: options.graceMs,
    handleSignals: true,
    beforeExit: await startTraceExport(process.env, io.stderr), // OTLP trace export when OTEL_EXPORTER_OTLP_*ENDPOINT is set
    log,
  }).catch((error: unknown) => {
    // The server names AGENT_PORT; the port came from --port here.
    const code = ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code;
    if (options.port !== undefined && code === "EADDRINUSE") throw new AgentLoopError("configuration", `--port: port ${options.port} is already in use`, { cause: error });
    throw error;
  });
  const url = server.url!;
  if (options.studio) {
    // The page's address, on stdout (nothing is opened): the one line a person or a script needs.
    io.stdout.write(`${url}/studio\n`);
  } else if (options.json) {
    io.stdout.write(`${JSON.stringify({ event: "listening", name: server.settings.name, url })}\n`);
  } else {
    io.stderr.write(`${colors.green("●")} agent ${colors.bold(server.settings.name)} listening on ${colors.cyan(url)}\n`);
    io.stderr.write(colors.dim(`  POST ${url}/v1/chat/completions · GET ${url}/.well-known/agent.json · A2A ${url}/a2a\n`));
    if (server.settings.studio) io.stderr.write(colors.dim(`  studio ${url}/studio\n`));
  }
  void server.ready().then((status) => {
    if (options.studio) {
      if (status.status !== "ready") io.stderr.write(colors.yellow(`● ${status.status}${status.unavailable ? `: ${status.unavailable.map((item) => `${item.kind} ${item.name} (${item.reason})`).join(", ")}` : ""}\n`));
    } else if (options.json) io.stdout.write(`${JSON.stringify({ event: "ready", ...status })}\n`);
    else if (status.status === "ready") io.stderr.write(`${colors.green("●")} ready\n`);
    else io.stderr.write(colors.yellow(`● ${status.status}${status.unavailable ? `: ${status.unavailable.map((item) => `${item.kind} ${item.name} (${item.reason})`).join(", ")}` : status.error ? `: ${status.error}` : ""}\n`));
  });
}

export function registerServeCommand(program: Command): void {
  const command = program
    .command("serve")
    .description("Serve an agent over HTTP: OpenAI chat completions, A2A and the KAOS memory routes")
    .option("-a, --agent <file>", "agent file (YAML); the KAOS variables (AGENT_NAME, MODEL_API_URL, MCP_SERVERS...) fill or override it");
  addModelOptions(command)
    .addOption(new Option("-p, --port <n>", "port (default AGENT_PORT, else 8000; 0 picks a free one)").argParser(integerOption("--port", 0, 65535)))
    .option("--host <address>", "interface to listen on", "0.0.0.0")
    .addOption(new Option("--grace-ms <n>", "on SIGTERM, how long running streams may finish before they are aborted").default(10_000).argParser(integerOption("--grace-ms", 0, 3_600_000)))
    .option("--json", "print the listening address and readiness as JSON lines on stdout")
    .option("--public-url <url>", "the base URL the agent cards advertise (AGENT_PUBLIC_URL), e.g. behind a proxy")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop serve --agent agent.yaml --port 8000
  $ DEBUG_MOCK_RESPONSES='["Hello!"]' agentloop serve --port 0 --json
  $ agentloop serve --agent agent.yaml --mock @script.json --tool-call-mode action
  $ AGENT_NAME=worker MODEL_API_URL=http://localhost:11434 MODEL_NAME=llama3.2 agentloop serve
  $ curl -N localhost:8000/v1/chat/completions -H 'content-type: application/json' \\
      -d '{"messages":[{"role":"user","content":"hi"}],"stream":true,"session_id":"s1"}'

Routes: GET /health, /ready, /.well-known/agent.json, /v1/models, /memory/sessions, /memory/events;
POST /v1/chat/completions, /a2a (A2A JSON-RPC); the studio page at /studio (AGENT_STUDIO=false: off).
Set AGENT_API_KEY to require a bearer token.`,
    )
    .action(async (options: ServeCommandOptions) => {
      await serveCommand(options);
    });
}

/** `agentloop studio`: the agent served on 127.0.0.1 (default port 4111) with its default store; prints the studio's URL. */
export function registerStudioCommand(program: Command): void {
  const command = program
    .command("studio")
    .description("Serve an agent with the studio page (see, talk to and steer it in a browser); prints the page's URL, opens nothing")
    .option("-a, --agent <file>", "agent file (YAML); the KAOS variables fill or override it");
  addModelOptions(command)
    .addOption(new Option("-p, --port <n>", "port (default 4111; 0 picks a free one)").default(4111).argParser(integerOption("--port", 0, 65535)))
    .option("--host <address>", "interface to listen on", "127.0.0.1")
    .addHelpText(
      "after",
      `
Examples:
  $ agentloop studio --agent agent.yaml          # prints http://127.0.0.1:4111/studio
  $ AGENT_API_KEY=secret agentloop studio --port 8080

The page asks for AGENT_API_KEY when it is set (kept for the browser tab only). docs/studio.md`,
    )
    .action(async (options: ServeCommandOptions) => {
      await serveCommand({ ...options, studio: true, graceMs: 2000 });
    });
}

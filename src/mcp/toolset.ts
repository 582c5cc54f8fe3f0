import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { authProviderOf, isInteractive } from "./auth.js";
import { ElicitRequestSchema, ErrorCode, McpError, type Tool as McpToolDescription } from "@modelcontextprotocol/sdk/types.js";
import { AgentLoopError, abortError, messageWithCause } from "../errors.js";
import type { JsonSchema } from "../model/model.js";
import type { Tool, ToolResultValue } from "../tools/tool.js";
import {
  exposedToolName,
  isStdioConfig,
  type McpHttpTransportConfig,
  type McpServerConfig,
  normalizeMcpUrl,
  validateMcpConfig,
} from "./config.js";
import { type McpCallResult, mapCallResult } from "./result.js";

/**
 * `idle`: not connected yet. `connected`: ready. `disconnected`: the connection died (or never came
 * up, after `keepConnecting()`); it is being reopened with backoff, in the background and on the next
 * call. `failed`: a finite `maxReconnects` budget is used up, calls return error results.
 * `closed`: `close()` was called.
 */
export type McpToolsetStatus = "idle" | "connected" | "disconnected" | "failed" | "closed";

export interface McpCallOptions {
  signal?: AbortSignal;
  /** Receives the server's progress notifications for this call. */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

const clientInfo = { name: "agentloop", version: "0.1.0" };
const defaultRequestTimeoutMs = 60_000;
const stderrTailChars = 4_096;
// A short debounce: servers often register several tools in a burst.
const listChangedDebounceMs = 50;
const defaultReconnectDelayMs = 500;
const defaultMaxReconnectDelayMs = 30_000;
/** The longest close() waits for a server to end its HTTP session. */
const maxSessionEndMs = 5_000;

type Transport = StdioClientTransport | StreamableHTTPClientTransport;

/**
 * The line of a server's stderr that says what went wrong, for error messages: the last error line
 * (`Error: Cannot find module …`, a Python traceback's `ModuleNotFoundError: …`), else the last
 * line. A runtime's boilerplate is skipped: stack frames, Node's `Node.js v20…` footer, the source
 * excerpt and the error object's fields Node prints after an uncaught error.
 */
export function usefulStderrLine(text: string): string {
  const lines = text
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "" && !/^\s+at |^Node\.js v\d|^\s*\^+$|^\s*[{}\]]\s*$|^\s+[\w$]+: |^node:internal\/|^\s*throw \w+;$/.test(line));
  const errorLine = lines.findLast((line) => /^(\w+\.)*\w*(Error|Exception)\b|^\s*(error|fatal)\b/i.test(line.trim()));
  return (errorLine ?? lines.at(-1) ?? "").trim();
}


/**
 * The tools of one MCP server, as ordinary core tools (kind `mcp`).
 *
 * Connects lazily (or with `connect()`), caches the tool list per connection and refreshes it when the
 * server sends `notifications/tools/list_changed`. A connection that dies is reopened for as long as
 * the process lives: at once by the next call, and in the background with exponential backoff
 * (`reconnectDelayMs` doubling up to `maxReconnectDelayMs`), so a server that comes back is used
 * again. While it is down, calls return error results naming the server, so a run goes on.
 */
export class McpToolset {
  readonly name: string;
  private readonly config: McpServerConfig;
  private client?: Client;
  private transport?: Transport;
  private statusValue: McpToolsetStatus = "idle";
  private opening?: Promise<void>;
  private reconnectsLeft: number;
  private reconnectCount = 0;
  /** Failed reconnection attempts since the connection was last up. */
  private failedAttempts = 0;
  /** No reconnection attempt before this time (Date.now() ms). */
  private nextAttemptAt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  /** The OAuth provider of an HTTP server with `auth` (made once: it keeps tokens across reconnections). */
  private authProvider?: OAuthClientProvider;
  private lastFailure = "";
  private stderrTail = "";
  /** Bumped on every (re)connection and on close, so callbacks of an old connection are ignored. */
  private generation = 0;
  private readonly exposed: Tool[] = [];
  private version = 0;
  private serverTools: McpToolDescription[] = [];

  constructor(config: McpServerConfig) {
    validateMcpConfig(config);
    this.config = config;
    this.name = config.name;
    this.reconnectsLeft = config.maxReconnects ?? Number.POSITIVE_INFINITY;
  }

  get status(): McpToolsetStatus {
    return this.statusValue;
  }

  /** Why the server is not usable now (undefined while connected or before the first connection). */
  get failure(): string | undefined {
    if (this.statusValue === "connected" || this.statusValue === "idle") return undefined;
    if (this.statusValue === "closed") return "the toolset was closed";
    return this.lastFailure || "connection lost";
  }

  /** How many times the connection was reopened. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** The stdio server's process id while connected (undefined over HTTP). */
  get pid(): number | undefined {
    return this.transport instanceof StdioClientTransport ? (this.transport.pid ?? undefined) : undefined;
  }

  /** The exposed tools as last listed (empty before the first connection). */
  get loadedTools(): Tool[] {
    return this.exposed;
  }

  /**
   * Grows by one each time the tool list is (re)loaded: on connecting, reconnecting, `refreshTools()`
   * and `notifications/tools/list_changed`. An `Agent` given this toolset in `tools` re-reads
   * `loadedTools` when it changed, so its model sees the server's current tools.
   */
  get toolsVersion(): number {
    return this.version;
  }

  /** The server-side descriptions of the exposed tools (after `allowedTools`). */
  get serverToolDescriptions(): readonly McpToolDescription[] {
    return this.serverTools;
  }

  /** Connects and lists the tools. Throws an `AgentLoopError` (kind `network`) naming the server when it cannot. */
  async connect(): Promise<this> {
    if (this.statusValue === "closed") throw new AgentLoopError("configuration", `MCP server "${this.name}": toolset is closed`);
    if (this.statusValue === "idle") {
      this.opening ??= this.open().finally(() => {
        this.opening = undefined;
      });
      try {
        await this.opening;
      } catch (error) {
        this.lastFailure = `could not connect: ${this.failureText(error)}`;
        throw new AgentLoopError("network", `MCP server "${this.name}" (${this.describeTarget()}): could not connect: ${this.failureText(error)}`, {
          cause: error,
        });
      }
    } else if (this.opening) {
      await this.opening.catch(() => undefined);
    }
    return this;
  }

  /**
   * The exposed tools, connecting first if needed. The array is the toolset's own and is updated in
   * place when the server's tool list changes.
   */
  async tools(): Promise<Tool[]> {
    if (this.statusValue === "idle") await this.connect();
    return this.exposed;
  }

  /** Lists the server's tools again (all pages) and updates the exposed tools. */
  async refreshTools(): Promise<Tool[]> {
    const client = this.client;
    if (!client || this.statusValue !== "connected") return this.exposed;
    await this.loadTools(client, this.generation);
    return this.exposed;
  }

  /**
   * Calls a server-side tool by its MCP name. Never throws except when `signal` aborts (an
   * `aborted` AgentLoopError): failures come back as error results naming the server.
   */
  async callTool(toolName: string, args: Record<string, unknown>, options: McpCallOptions = {}): Promise<ToolResultValue> {
    const { signal } = options;
    // A call that failed before reaching the server (transport error) is retried once after reconnecting.
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw abortError(signal);
      const client = await this.usableClient();
      if (typeof client === "string") return { content: client, isError: true };
      try {
        const result = await client.callTool({ name: toolName, arguments: args }, undefined, {
          signal,
          timeout: this.config.requestTimeoutMs ?? defaultRequestTimeoutMs,
          resetTimeoutOnProgress: true,
          onprogress: options.onProgress
            ? (progress) => options.onProgress?.({ progress: progress.progress, total: progress.total, message: progress.message })
            : undefined,
        });
        return mapCallResult(result as McpCallResult);
      } catch (error) {
        if (signal?.aborted) throw abortError(signal);
        // Step-up: the server wants a broader scope for this call; the user signs in again, then the call is retried once.
        const provider = this.authProvider;
        if (error instanceof UnauthorizedError && isInteractive(provider) && attempt === 0 && this.transport instanceof StreamableHTTPClientTransport) {
          try {
            await this.transport.finishAuth(await provider.waitForAuthorizationCode());
            continue;
          } catch (authError) {
            return { content: `MCP server "${this.name}", tool "${toolName}": authorization failed: ${messageWithCause(authError)}`, isError: true };
          }
        }
        if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
          // The server answered with a protocol error (unknown tool, bad params, timeout): the connection is fine.
          return { content: `MCP server "${this.name}", tool "${toolName}": ${error.message}`, isError: true };
        }
        this.markDisconnected(client, error);
        const lostDuringCall = error instanceof McpError && error.code === ErrorCode.ConnectionClosed;
        if (!lostDuringCall && attempt === 0) continue;
        return {
          content: `MCP server "${this.name}": connection lost during the call to "${toolName}": ${this.failureText(error)}`,
          isError: true,
        };
      }
    }
  }

  /**
   * After a first connection that failed (`connect()` threw): keep trying in the background, with
   * the same backoff as after a lost connection, until it connects or the toolset is closed. The
   * tools appear (`toolsVersion` grows) once it does. Does nothing in any other state.
   */
  keepConnecting(): void {
    if (this.statusValue !== "idle") return;
    if (this.opening) {
      // A first connection still under way (slower than the caller waited): keep trying if it fails.
      this.opening.then(undefined, () => this.keepConnecting());
      return;
    }
    this.statusValue = "disconnected";
    this.failedAttempts = 1;
    this.retryLater(this.backoffMs());
  }

  /**
   * Closes the connection; a stdio server process is terminated, an HTTP session ended (DELETE,
   * given up after the request timeout, at most 5 s). Safe to call twice.
   */
  async close(): Promise<void> {
    if (this.statusValue === "closed") return;
    this.statusValue = "closed";
    this.generation++;
    this.stopTimers();
    if (isInteractive(this.authProvider)) await this.authProvider.close();
    await this.opening?.catch(() => undefined);
    await this.dispose(this.client, this.transport, true);
    this.client = undefined;
    this.transport = undefined;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The client to call, reconnecting when allowed, or the text of an error result. */
  private async usableClient(): Promise<Client | string> {
    if (this.opening) await this.opening.catch(() => undefined);
    switch (this.statusValue) {
      case "connected":
        return this.client!;
      case "closed":
      case "failed":
        return this.unavailableText();
      case "idle":
        try {
          await this.connect();
        } catch (error) {
          return messageWithCause(error);
        }
        return this.usableClient();
      case "disconnected": {
        // Right after a loss a call reconnects at once; after failed attempts it waits for the backoff.
        const wait = this.nextAttemptAt - Date.now();
        if (wait > 0) return this.unavailableText();
        if (!(await this.reconnect())) return this.unavailableText();
        return this.usableClient();
      }
    }
  }

  /**
   * One reconnection attempt (shared by concurrent callers and the background timer). Resolves true
   * when connected; on failure schedules the next attempt with backoff, or gives up for good when a
   * finite `maxReconnects` is used up.
   */
  private reconnect(): Promise<boolean> {
    if (!this.opening) {
      if (this.reconnectsLeft <= 0) {
        this.statusValue = "failed";
        return Promise.resolve(false);
      }
      this.reconnectsLeft--;
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
      this.opening = this.open().finally(() => {
        this.opening = undefined;
      });
      const attempt = this.opening.then(
        () => {
          this.reconnectCount++;
          return true;
        },
        (error: unknown) => {
          if (this.statusValue === "closed") return false;
          this.lastFailure = `reconnecting failed: ${this.failureText(error)}`;
          this.failedAttempts++;
          if (this.reconnectsLeft <= 0) this.statusValue = "failed";
          else this.retryLater(this.backoffMs());
          return false;
        },
      );
      return attempt;
    }
    return this.opening.then(
      () => (this.statusValue as McpToolsetStatus) === "connected",
      () => false,
    );
  }

  /** The wait before the next attempt: `reconnectDelayMs` doubled per failed attempt, capped. */
  private backoffMs(): number {
    const initial = this.config.reconnectDelayMs ?? defaultReconnectDelayMs;
    const cap = this.config.maxReconnectDelayMs ?? defaultMaxReconnectDelayMs;
    return Math.min(cap, initial * 2 ** Math.max(0, this.failedAttempts - 1));
  }

  /** Schedules a background attempt (the timer never keeps the process alive). */
  private retryLater(delayMs: number): void {
    clearTimeout(this.retryTimer);
    this.nextAttemptAt = Date.now() + delayMs;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.statusValue === "disconnected") void this.reconnect();
    }, delayMs);
    this.retryTimer.unref?.();
  }

  private stopTimers(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
  }

  /** Pings the server every `pingIntervalMs`; a ping the server cannot answer marks the connection lost. */
  private startPings(client: Client, generation: number): void {
    const interval = this.config.pingIntervalMs ?? 0;
    if (interval <= 0) return;
    clearInterval(this.pingTimer);
    let pinging = false;
    this.pingTimer = setInterval(() => {
      if (pinging || generation !== this.generation || this.statusValue !== "connected") return;
      pinging = true;
      client
        .ping({ timeout: Math.max(interval, 1_000) })
        .catch((error: unknown) => {
          // A server that answers with a protocol error is alive.
          if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed && error.code !== ErrorCode.RequestTimeout) return;
          this.markDisconnected(client, error);
        })
        .finally(() => {
          pinging = false;
        });
    }, interval);
    this.pingTimer.unref?.();
  }

  /** A server's question: to the configured handler, else declined with the reason. */
  private async elicit(params: Record<string, unknown>, signal: AbortSignal): Promise<Record<string, unknown>> {
    const handler = this.config.onElicitation;
    if (params.mode === "url") {
      return { action: "decline", _meta: { "agentloop/reason": "URL-mode elicitation is not supported by this client" } };
    }
    if (!handler) {
      return {
        action: "decline",
        _meta: { "agentloop/reason": `no one to ask: this agent runs unattended (agentloop run or serve); MCP server "${this.name}" asked: ${String(params.message ?? "")}` },
      };
    }
    const answer = await handler(
      { server: this.name, message: String(params.message ?? ""), requestedSchema: (params.requestedSchema ?? { type: "object", properties: {} }) as Record<string, unknown> },
      { signal },
    );
    return answer.action === "accept" ? { action: "accept", content: answer.content ?? {} } : { action: answer.action };
  }

  private unavailableText(): string {
    if (this.statusValue === "closed") return `MCP server "${this.name}" is unavailable: the toolset was closed`;
    const reason = this.lastFailure || "connection lost";
    if (this.statusValue === "failed") return `MCP server "${this.name}" is unavailable (${reason}; reconnect limit ${this.config.maxReconnects} reached)`;
    const wait = this.nextAttemptAt - Date.now();
    const next = wait > 0 ? `; reconnecting, next attempt in ${Math.ceil(wait / 1000)} s` : "; reconnecting";
    return `MCP server "${this.name}" is unavailable (${reason}${next})`;
  }

  private failureText(error: unknown): string {
    const stderr = usefulStderrLine(this.stderrTail);
    return stderr ? `${messageWithCause(error)} (server stderr: ${stderr})` : messageWithCause(error);
  }

  private describeTarget(): string {
    const config = this.config;
    if (isStdioConfig(config)) return `stdio: ${[config.command, ...(config.args ?? [])].join(" ")}`;
    return `http: ${normalizeMcpUrl(config.url, config.appendMcpPath, config.name).href}`;
  }

  /** Opens a new connection (closing any old one) and loads the tool list. */
  private async open(afterLogin = false): Promise<void> {
    const oldClient = this.client;
    const oldTransport = this.transport;
    this.client = undefined;
    this.transport = undefined;
    // Taken before the old connection is disposed, so a close() meanwhile is seen.
    const generation = ++this.generation;
    if (oldClient || oldTransport) await this.dispose(oldClient, oldTransport, false);
    if (generation !== this.generation) throw new Error("toolset was closed while connecting");
    this.stderrTail = "";
    const client = new Client(clientInfo, {
      // Form-mode elicitation: a server may ask the user a question (answered or declined, never "Method not found").
      capabilities: { elicitation: { form: { applyDefaults: true } } },
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: listChangedDebounceMs,
          onChanged: () => {
            if (generation !== this.generation || this.statusValue !== "connected") return;
            this.loadTools(client, generation).then(
              () => this.config.onToolsChanged?.(this.exposed.map((tool) => tool.name)),
              () => undefined,
            );
          },
        },
      },
    });
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => this.elicit(request.params as Record<string, unknown>, extra.signal));
    const transport = this.createTransport();
    // The loopback redirect listens before any request, so its URL is known at registration.
    if (isInteractive(this.authProvider)) await this.authProvider.start();
    client.onclose = () => {
      if (generation !== this.generation) return;
      this.markDisconnected(client, new Error(this.transport instanceof StdioClientTransport ? "server process exited" : "connection closed"));
    };
    // Transport errors also surface on the failing request; recorded here for the error message only.
    client.onerror = (error) => {
      if (generation === this.generation && this.statusValue !== "connected") this.lastFailure = messageWithCause(error);
    };
    try {
      const timeout = this.config.connectTimeoutMs ?? defaultRequestTimeoutMs;
      await client.connect(transport, { timeout });
      if (generation !== this.generation) throw new Error("toolset was closed while connecting");
      this.client = client;
      this.transport = transport;
      await this.loadTools(client, generation, timeout);
      if (generation !== this.generation) throw new Error("toolset was closed while connecting");
    } catch (error) {
      this.client = undefined;
      this.transport = undefined;
      // The authorization-code flow: the user signs in (the URL was printed), the browser comes
      // back to the loopback redirect with a code, the tokens are fetched and stored; then again.
      const provider = this.authProvider;
      if (!afterLogin && isInteractive(provider) && error instanceof UnauthorizedError && transport instanceof StreamableHTTPClientTransport) {
        try {
          await transport.finishAuth(await provider.waitForAuthorizationCode());
        } finally {
          await this.dispose(client, transport, false);
        }
        if (generation !== this.generation) throw new Error("toolset was closed while signing in");
        return this.open(true);
      }
      await this.dispose(client, transport, false);
      throw error;
    }
    this.statusValue = "connected";
    this.lastFailure = "";
    this.failedAttempts = 0;
    this.nextAttemptAt = 0;
    this.startPings(client, generation);
  }

  private createTransport(): Transport {
    const config = this.config;
    if (isStdioConfig(config)) {
      const transport = new StdioClientTransport({
        command: config.command,
        args: config.args,
        env: config.env,
        cwd: config.cwd,
        stderr: config.stderr ?? "pipe",
      });
      transport.stderr?.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-stderrTailChars);
      });
      return transport;
    }
    const http = config as McpHttpTransportConfig;
    const url = normalizeMcpUrl(http.url, http.appendMcpPath, config.name);
    const headers = http.headers;
    this.authProvider ??= authProviderOf(http.auth, config.name, url.href);
    return new StreamableHTTPClientTransport(url, {
      authProvider: this.authProvider,
      // Resumable streams, per the spec: an event stream that closes after an event with an id is
      // reopened with Last-Event-ID, after the server's `retry` (else 1 s, growing 1.5x to 30 s), up
      // to 2 times. A server that is gone for good is this toolset's own reconnection's business.
      reconnectionOptions: { maxRetries: 2, initialReconnectionDelay: 1000, maxReconnectionDelay: 30_000, reconnectionDelayGrowFactor: 1.5 },
      fetch:
        typeof headers === "function"
          ? (input, init) => {
              const merged = new Headers(init?.headers);
              for (const [key, value] of Object.entries(headers())) merged.set(key, value);
              return fetch(input, { ...init, headers: merged });
            }
          : undefined,
      requestInit: headers && typeof headers === "object" ? { headers } : undefined,
    });
  }

  private async loadTools(client: Client, generation: number, timeout = this.config.requestTimeoutMs ?? defaultRequestTimeoutMs): Promise<void> {
    const listed: McpToolDescription[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout });
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    if (generation !== this.generation) return;
    const allowed = this.config.allowedTools;
    const isAllowed = allowed === undefined ? () => true : typeof allowed === "function" ? allowed : (name: string) => allowed.includes(name);
    // Tools that can only run as MCP tasks cannot be called with a plain tools/call.
    this.serverTools = listed.filter((tool) => isAllowed(tool.name) && tool.execution?.taskSupport !== "required");
    this.exposed.splice(0, this.exposed.length, ...this.serverTools.map((tool) => this.toTool(tool)));
    this.version++;
  }

  private toTool(description: McpToolDescription): Tool {
    const mcpName = description.name;
    const tool: Tool = {
      name: exposedToolName(this.name, mcpName, this.config.naming),
      description: description.description ?? description.title ?? mcpName,
      parameters: (description.inputSchema ?? { type: "object", properties: {} }) as JsonSchema,
      kind: "mcp",
      mcp: { server: this.name, tool: mcpName },
      action: "tool_call",
      execute: (args, context) =>
        this.callTool(mcpName, (args ?? {}) as Record<string, unknown>, {
          signal: context.signal,
          onProgress: (progress) => context.progress(progress),
        }),
    };
    if (this.config.toolTimeoutMs !== undefined) tool.timeoutMs = this.config.toolTimeoutMs;
    if (this.config.truncation !== undefined) tool.truncation = this.config.truncation;
    if (this.config.sequential !== undefined) tool.sequential = this.config.sequential;
    return tool;
  }

  private markDisconnected(client: Client, error: unknown): void {
    if (client !== this.client || this.statusValue !== "connected") return;
    this.statusValue = "disconnected";
    this.lastFailure = this.failureText(error);
    clearInterval(this.pingTimer);
    this.pingTimer = undefined;
    // The next call reconnects at once; without calls, the background attempt comes a little later.
    this.failedAttempts = 0;
    this.retryLater(this.config.reconnectDelayMs ?? defaultReconnectDelayMs);
    this.nextAttemptAt = 0;
  }

  /** Best-effort teardown: ends an HTTP session politely on close, then closes the transport (killing a stdio child). */
  private async dispose(client: Client | undefined, transport: Transport | undefined, terminateSession: boolean): Promise<void> {
    if (terminateSession && transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
      // A hung server must not hold close() up: the DELETE gets the request timeout (at most 5 s);
      // closing the transport below aborts it.
      const limitMs = Math.min(this.config.requestTimeoutMs ?? defaultRequestTimeoutMs, maxSessionEndMs);
      let limit: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([transport.terminateSession().catch(() => undefined), new Promise((resolve) => (limit = setTimeout(resolve, limitMs).unref()))]);
      clearTimeout(limit);
    }
    if (client) await client.close().catch(() => undefined);
    else if (transport) await transport.close().catch(() => undefined);
  }
}

/** A toolset for one MCP server. It connects on first use (`await toolset.tools()`) or with `connect()`. */
export function mcpToolset(config: McpServerConfig): McpToolset {
  return new McpToolset(config);
}

/** Several connected MCP servers. */
export class McpToolsetGroup {
  constructor(readonly toolsets: readonly McpToolset[]) {}

  /** Every server's exposed tools, in config order (a snapshot). */
  get tools(): Tool[] {
    return this.toolsets.flatMap((toolset) => toolset.loadedTools);
  }

  /** The servers' names, for error messages. */
  get name(): string {
    return this.toolsets.map((toolset) => toolset.name).join(", ");
  }

  /** Every server's exposed tools, in config order (a snapshot); the same as `tools`. */
  get loadedTools(): Tool[] {
    return this.tools;
  }

  /** Changes when any server's tool list is reloaded (the sum of their `toolsVersion`s, which only grow). */
  get toolsVersion(): number {
    let sum = 0;
    for (const toolset of this.toolsets) sum += toolset.toolsVersion;
    return sum;
  }

  get(name: string): McpToolset | undefined {
    return this.toolsets.find((toolset) => toolset.name === name);
  }

  async close(): Promise<void> {
    await Promise.all(this.toolsets.map((toolset) => toolset.close()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * Connects to one MCP server (returns its toolset) or to several (returns a group). Throws an
 * `AgentLoopError` naming the server that failed; the others are closed again.
 */
export function connectMcp(config: McpServerConfig): Promise<McpToolset>;
export function connectMcp(configs: readonly McpServerConfig[]): Promise<McpToolsetGroup>;
export async function connectMcp(input: McpServerConfig | readonly McpServerConfig[]): Promise<McpToolset | McpToolsetGroup> {
  if (!Array.isArray(input)) return new McpToolset(input as McpServerConfig).connect();
  const configs = input as readonly McpServerConfig[];
  const seen = new Set<string>();
  for (const config of configs) {
    validateMcpConfig(config);
    if (seen.has(config.name)) throw new AgentLoopError("configuration", `MCP server name "${config.name}" is used twice`);
    seen.add(config.name);
  }
  const toolsets = configs.map((config) => new McpToolset(config));
  const outcomes = await Promise.allSettled(toolsets.map((toolset) => toolset.connect()));
  const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
  if (failed) {
    await Promise.all(toolsets.map((toolset) => toolset.close()));
    throw failed.reason;
  }
  return new McpToolsetGroup(toolsets);
}

/**
 * OAuth for MCP servers over Streamable HTTP, through the SDK's `authProvider`:
 * - `client_credentials` (machine to machine, for `agentloop serve`): the SDK's ClientCredentialsProvider.
 * - `authorization_code` with PKCE (a person at the CLI): the authorization URL is printed (or handed
 *   to `onAuthorizationUrl`), the browser comes back to a loopback redirect on 127.0.0.1, and the
 *   client registration and tokens are stored per server in the user's config folder (0600), so the
 *   next start needs no login; an expired token is refreshed by the SDK with the refresh token.
 */
import { createPrivateKey, type KeyObject, randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { homedir } from "node:os";
import { join } from "node:path";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { ClientCredentialsProvider, PrivateKeyJwtProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { AgentLoopError } from "../errors.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

/** Machine to machine: the client-credentials grant, the client authenticated by a secret or by a signed JWT. */
export interface McpClientCredentialsAuth {
  type: "client_credentials";
  clientId: string;
  /** The client secret (`client_secret_basic` / `client_secret_post`, as the server supports)... */
  clientSecret?: string;
  /** ...or a private key (PKCS#8 PEM): the client signs a JWT assertion instead (`private_key_jwt`, RFC 7523). */
  privateKey?: string;
  /** The JWT's signing algorithm (default: from the key: RS256 for RSA, ES256/ES384/ES512 for P-256/P-384/P-521, PS256 for RSA-PSS). */
  algorithm?: string;
  scope?: string;
  /**
   * The authorization server's issuer URL: the credentials are sent only there, whatever
   * authorization server the MCP server names. Recommended (the MCP SDK warns without it).
   */
  issuer?: string;
}

export interface McpAuthorizationCodeAuth {
  type: "authorization_code";
  /** A pre-registered client id (else the client registers itself dynamically, when the server allows). */
  clientId?: string;
  clientSecret?: string;
  scope?: string;
  /**
   * The public https URL of this client's metadata document (a Client ID Metadata Document, SEP-991):
   * when the authorization server advertises `client_id_metadata_document_supported`, this URL is
   * the client_id and no registration is needed; else the client registers dynamically as usual.
   * The document must list the loopback redirect (`http://127.0.0.1/callback`; any port is accepted
   * for loopback redirects) — see `clientMetadataDocument()`.
   */
  clientMetadataUrl?: string;
  /** Where registrations and tokens are kept (default `$XDG_CONFIG_HOME/agentloop/mcp-auth`, else `~/.config/agentloop/mcp-auth`). */
  tokenDir?: string;
  /** Port of the loopback redirect on 127.0.0.1 (default: any free port). */
  callbackPort?: number;
  /** Gets the URL the user must open (default: printed on stderr). */
  onAuthorizationUrl?: (url: string) => void | Promise<void>;
  /** How long to wait for the user to come back (default 5 minutes). */
  timeoutMs?: number;
}

/** How an HTTP MCP server is authorized: one of the flows above, or any SDK `OAuthClientProvider`. */
export type McpAuthConfig = McpClientCredentialsAuth | McpAuthorizationCodeAuth | { provider: OAuthClientProvider };

/** A provider that can wait for the user to come back with a code (the authorization-code flow). */
export interface InteractiveAuthProvider extends OAuthClientProvider {
  /** Starts the loopback redirect (before the first request). */
  start(): Promise<void>;
  /** The code the browser brought back to the redirect. */
  waitForAuthorizationCode(): Promise<string>;
  close(): Promise<void>;
}

export function isInteractive(provider: OAuthClientProvider | undefined): provider is InteractiveAuthProvider {
  return typeof (provider as InteractiveAuthProvider | undefined)?.waitForAuthorizationCode === "function";
}

export function authProviderOf(auth: McpAuthConfig | undefined, serverName: string, serverUrl: string): OAuthClientProvider | undefined {
  if (!auth) return undefined;
  if ("provider" in auth) return auth.provider;
  if (auth.type === "client_credentials") {
    if (auth.privateKey !== undefined) {
      const algorithm = auth.algorithm ?? signingAlgorithmOf(auth.privateKey, serverName);
      return new PrivateKeyJwtProvider({ clientId: auth.clientId, privateKey: auth.privateKey, algorithm, scope: auth.scope, clientName: "agentloop", expectedIssuer: auth.issuer });
    }
    return new ClientCredentialsProvider({ clientId: auth.clientId, clientSecret: auth.clientSecret ?? "", scope: auth.scope, clientName: "agentloop", expectedIssuer: auth.issuer });
  }
  return new LoopbackAuthProvider(auth, serverName, serverUrl);
}

/**
 * The client metadata document to publish at `clientMetadataUrl` (a Client ID Metadata Document):
 * what agentloop's authorization-code flow sends, with the loopback redirect without a port (the
 * port is chosen at sign-in; authorization servers accept any port on a loopback redirect), or
 * with `callbackPort` when you pin one.
 */
export function clientMetadataDocument(clientMetadataUrl: string, options: { callbackPort?: number; clientName?: string; scope?: string } = {}): OAuthClientMetadata & { client_id: string } {
  return {
    client_id: clientMetadataUrl,
    client_name: options.clientName ?? "agentloop",
    redirect_uris: [options.callbackPort ? `http://127.0.0.1:${options.callbackPort}/callback` : "http://127.0.0.1/callback"],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    ...(options.scope ? { scope: options.scope } : {}),
  };
}

/** The JWT algorithm that fits a PEM private key; a key that fits none needs `algorithm`. */
export function signingAlgorithmOf(privateKeyPem: string, serverName: string): string {
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch (error) {
    throw new AgentLoopError("configuration", `MCP server "${serverName}": auth.privateKey is not a readable private key (PEM): ${(error as Error).message}`);
  }
  const type = key.asymmetricKeyType;
  if (type === "rsa") return "RS256";
  if (type === "rsa-pss") return "PS256";
  if (type === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    const algorithm = curve === "prime256v1" ? "ES256" : curve === "secp384r1" ? "ES384" : curve === "secp521r1" ? "ES512" : undefined;
    if (algorithm) return algorithm;
  }
  throw new AgentLoopError("configuration", `MCP server "${serverName}": auth.privateKey is a ${type} key; use an RSA or P-256/P-384/P-521 EC key, or set auth.algorithm`);
}

/** The user's config folder for MCP credentials. */
export function defaultTokenDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "agentloop", "mcp-auth");
}

interface Stored {
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  codeVerifier?: string;
}

/** The authorization-code flow with PKCE and a loopback redirect; state kept in one 0600 file per server. */
class LoopbackAuthProvider implements InteractiveAuthProvider {
  private readonly file: string;
  private server?: Server;
  private port = 0;
  private expectedState?: string;
  private waiting?: { resolve: (code: string) => void; reject: (error: Error) => void };
  private arrived?: { code?: string; error?: string };

  constructor(
    private readonly options: McpAuthorizationCodeAuth,
    private readonly serverName: string,
    serverUrl: string,
  ) {
    const dir = options.tokenDir ?? defaultTokenDir();
    // One file per server URL (a readable name plus no characters a file system dislikes).
    this.file = join(dir, `${serverUrl.replace(/^https?:\/\//, "").replace(/[^A-Za-z0-9._-]+/g, "_")}.json`);
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      if (url.pathname !== "/callback") {
        response.writeHead(404).end();
        return;
      }
      const code = url.searchParams.get("code") ?? undefined;
      // The authorization server's refusal (`error`, e.g. access_denied, with its description), a forged state, or no code.
      const refusal = url.searchParams.get("error");
      const description = url.searchParams.get("error_description");
      const problem = refusal
        ? `${refusal}${description ? ` (${description})` : ""}`
        : this.expectedState !== undefined && url.searchParams.get("state") !== this.expectedState
          ? "state mismatch"
          : code
            ? undefined
            : "no code";
      response.writeHead(problem ? 400 : 200, { "content-type": "text/plain; charset=utf-8" });
      response.end(problem ? `Authorization failed: ${problem}` : "agentloop is authorized. You can close this tab.");
      this.deliver(problem ? { error: problem } : { code });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.callbackPort ?? 0, "127.0.0.1", () => resolve());
    });
    server.unref();
    this.server = server;
    const address = server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
  }

  private deliver(result: { code?: string; error?: string }): void {
    if (this.waiting) {
      const waiting = this.waiting;
      this.waiting = undefined;
      if (result.code) waiting.resolve(result.code);
      else waiting.reject(new Error(`MCP server "${this.serverName}": authorization failed: ${result.error}`));
    } else this.arrived = result;
  }

  waitForAuthorizationCode(): Promise<string> {
    const arrived = this.arrived;
    this.arrived = undefined;
    if (arrived?.code) return Promise.resolve(arrived.code);
    if (arrived?.error) return Promise.reject(new Error(`MCP server "${this.serverName}": authorization failed: ${arrived.error}`));
    const timeoutMs = this.options.timeoutMs ?? 300_000;
    // While someone is signing in, the redirect's listener keeps the process alive (else a CLI
    // whose only pending work is this wait would exit before the browser comes back).
    this.server?.ref();
    return new Promise<string>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        this.server?.unref();
      };
      const timer = setTimeout(() => {
        this.waiting = undefined;
        settle();
        reject(new Error(`MCP server "${this.serverName}": nobody completed the authorization within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      this.waiting = {
        resolve: (code) => {
          settle();
          resolve(code);
        },
        reject: (error) => {
          settle();
          reject(error);
        },
      };
    });
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get clientMetadataUrl(): string | undefined {
    return this.options.clientMetadataUrl;
  }

  get redirectUrl(): string {
    return `http://127.0.0.1:${this.port}/callback`;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "agentloop",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: this.options.clientSecret ? "client_secret_post" : "none",
      ...(this.options.scope ? { scope: this.options.scope } : {}),
    };
  }

  state(): string {
    this.expectedState = randomBytes(16).toString("base64url");
    return this.expectedState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    if (this.options.clientId) return { client_id: this.options.clientId, ...(this.options.clientSecret ? { client_secret: this.options.clientSecret } : {}) };
    return this.read().client;
  }

  saveClientInformation(client: OAuthClientInformationMixed): void {
    this.write({ ...this.read(), client });
  }

  tokens(): OAuthTokens | undefined {
    return this.read().tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.write({ ...this.read(), tokens });
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    if (this.options.onAuthorizationUrl) await this.options.onAuthorizationUrl(url.href);
    else process.stderr.write(`MCP server "${this.serverName}" needs you to sign in: open\n  ${url.href}\n`);
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.write({ ...this.read(), codeVerifier });
  }

  codeVerifier(): string {
    const verifier = this.read().codeVerifier;
    if (!verifier) throw new Error(`MCP server "${this.serverName}": no PKCE code verifier saved`);
    return verifier;
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    const stored = this.read();
    if (scope === "all") this.write({});
    else if (scope === "client") this.write({ ...stored, client: undefined });
    else if (scope === "tokens") this.write({ ...stored, tokens: undefined });
    else if (scope === "verifier") this.write({ ...stored, codeVerifier: undefined });
  }

  private read(): Stored {
    try {
      return JSON.parse(readFileSync(this.file, "utf8")) as Stored;
    } catch {
      return {};
    }
  }

  private write(stored: Stored): void {
    mkdirSync(join(this.file, ".."), { recursive: true, mode: 0o700 });
    writeFileSync(this.file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
    // An existing file keeps its old mode on write: tighten it.
    chmodSync(this.file, 0o600);
  }
}

/** One input of a prompty file (or one parameter of a function tool). */
export interface PromptyProperty {
  name: string;
  /** `string`, `integer`, `number`, `boolean`, `array`, `object`... (default `string`). */
  kind: string;
  description?: string;
  default?: unknown;
  /** A required input without a default must be given, else preparing the prompt fails naming it. */
  required: boolean;
}

/** The `model:` section. */
export interface PromptyModel {
  /** The model name (`gpt-4o-mini`, `claude-sonnet-4-5`...). */
  id?: string;
  /** `openai`, `anthropic`, `openai-compatible`... */
  provider?: string;
  /** `chat` (default) or `responses` for OpenAI. */
  apiType?: string;
  /** How to reach the model: `endpoint` (or `baseURL`), `apiKey`... (env references resolved). */
  connection?: Record<string, unknown>;
  /** Request options: temperature, maxOutputTokens (or maxTokens), topP, stop, seed... */
  options?: Record<string, unknown>;
  /** Model specs (`provider:model`) that take a request this model could not serve (`withFallback`). */
  fallback?: string[];
}

/** A tool declared in the frontmatter. */
export interface PromptyToolSpec {
  name: string;
  /** `function`, `prompty`, `mcp`, or any custom kind with a registered handler. */
  kind: string;
  description?: string;
  /** Parameter name → input name of the running prompty; bound parameters are hidden from the model. */
  bindings: Record<string, string>;
  /** `function` (and custom) tools: the parameters the model fills in. */
  parameters: PromptyProperty[];
  /** `prompty` tools: the child file, relative to the declaring file. */
  path?: string;
  /** `prompty` tools: `single` (one model call, the default) or `agentic` (a full loop). */
  mode?: "single" | "agentic";
  /** Every field as written (env references resolved), for custom kind handlers. */
  raw: Record<string, unknown>;
}

/** A loaded `.prompty` file. */
export interface PromptyAgent {
  name: string;
  description?: string;
  model: PromptyModel;
  inputs: PromptyProperty[];
  tools: PromptyToolSpec[];
  /** The markdown body: a nunjucks template with `system:` / `user:` / `assistant:` role markers. */
  template: string;
  /** Absolute path of the file it was loaded from (children resolve relative to it). */
  path?: string;
  /** Rounds of tool calls allowed per invocation (frontmatter `maxIterations`; default 10). */
  maxIterations?: number;
  /** `false` (frontmatter `stream: false` or `model.options.stream: false`): non-streaming requests, no `token` events. */
  stream?: boolean;
  /** Context budget in characters (frontmatter `contextBudget` or `context_budget`, Prompty §13.3). */
  contextBudget?: number;
  /** Frontmatter `guardrails`, handed to `AgentConfig.guardrails` as written. */
  guardrails?: unknown;
  /** Frontmatter `outputs`: the final answer must be a JSON object with these properties (`result.output`). */
  outputs?: PromptyProperty[];
  /** The whole frontmatter, env references resolved. */
  frontmatter: Record<string, unknown>;
}

/**
 * An agent's tools: its own and its toolsets' (whose tools can change between model calls), and the
 * definitions the model sees. Toolsets are synced before each model call and before each wave: one
 * integer comparison per toolset when nothing changed.
 */
import { AgentLoopError } from "../errors.js";
import type { ToolDefinition } from "../model/model.js";
import { type Tool, toolNames } from "../tools/tool.js";
import { jsonSchemaOf, warmValidators } from "../tools/validate.js";
import { hideBoundParameters } from "./bindings.js";
import type { Toolset } from "./types.js";

export class Toolbox {
  /** The tools by name; replaced (never changed in place) when a toolset's tools change. */
  tools = new Map<string, Tool<any>>();
  private definitions?: ToolDefinition[];
  /** Tools and toolsets in config order. */
  private readonly sources: Array<Tool<any> | Toolset> = [];
  /** The toolsets among `sources`, and the `toolsVersion` of each that `tools` reflects. */
  private readonly toolsets: Toolset[] = [];
  private readonly toolsetVersions: number[] = [];

  /** Throws a TypeError naming the problem (`Agent config: …`) for a bad tool, toolset or a duplicate name. */
  constructor(
    sources: ReadonlyArray<Tool<any> | Toolset>,
    private readonly agentName: string,
  ) {
    for (const source of sources) {
      if (isToolset(source)) {
        this.toolsets.push(source);
        this.toolsetVersions.push(source.toolsVersion);
      } else if (!source || typeof source.name !== "string" || typeof source.execute !== "function") {
        throw new TypeError(
          `Agent config: every tool needs a name and an execute function, every toolset a numeric toolsVersion and a loadedTools array (got ${JSON.stringify((source as { name?: unknown } | undefined)?.name)})`,
        );
      }
      this.sources.push(source);
    }
    const error = this.collect(this.tools);
    if (error) throw new TypeError(`Agent config: ${error}`);
    warmValidators(this.tools.values());
  }

  /**
   * Takes in the tools of toolsets whose version changed since last seen. A duplicate name is
   * returned as an error (the tools stay as they were, and the next call checks again).
   */
  sync(): AgentLoopError | undefined {
    const { toolsets, toolsetVersions } = this;
    let changed = false;
    for (let index = 0; index < toolsets.length; index++) {
      if (toolsets[index]!.toolsVersion !== toolsetVersions[index]) changed = true;
    }
    if (!changed) return undefined;
    const versions = toolsets.map((toolset) => toolset.toolsVersion);
    const tools = new Map<string, Tool<any>>();
    const error = this.collect(tools);
    if (error) return new AgentLoopError("configuration", `agent "${this.agentName}": ${error}`);
    for (let index = 0; index < versions.length; index++) toolsetVersions[index] = versions[index]!;
    this.tools = tools;
    this.definitions = undefined;
    warmValidators(tools.values());
    return undefined;
  }

  /** The definitions of the tools as last synced, bound parameters hidden. */
  currentDefinitions(): ToolDefinition[] {
    this.definitions ??= [...this.tools.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: hideBoundParameters(jsonSchemaOf(tool), tool.bindings),
    }));
    return this.definitions;
  }

  /** The tool a call's name means: a listed name, or an MCP tool's other name when exactly one tool has it. */
  resolveName(name: string): string {
    return resolveToolName(this.tools, name);
  }

  /** Fills `into` from the sources (toolsets as they are now); returns the problem, if any. */
  private collect(into: Map<string, Tool<any>>): string | undefined {
    for (const source of this.sources) {
      // Sources were sorted when the toolbox was built: a tool has an execute function, a toolset not.
      const tools = typeof (source as Tool<any>).execute === "function" ? [source as Tool<any>] : (source as Toolset).loadedTools;
      for (const tool of tools) {
        const from = source === tool ? "" : ` (from toolset ${JSON.stringify(source.name ?? "unnamed")})`;
        if (!tool || typeof tool.name !== "string" || typeof tool.execute !== "function") {
          return `every tool needs a name and an execute function (got ${JSON.stringify(tool?.name)}${from})`;
        }
        if (into.has(tool.name)) return `two tools are named "${tool.name}"${from}`;
        into.set(tool.name, tool);
      }
    }
    return undefined;
  }
}

/** Per tool list: each MCP tool's other names (see `toolNames`) → its listed name; null when two tools share one. */
const otherNames = new WeakMap<Map<string, Tool<any>>, Map<string, string | null>>();

function resolveToolName(tools: Map<string, Tool<any>>, name: string): string {
  if (tools.has(name)) return name;
  let aliases = otherNames.get(tools);
  if (!aliases) {
    aliases = new Map();
    for (const tool of tools.values()) {
      for (const alias of toolNames(tool)) {
        if (alias === tool.name || tools.has(alias)) continue;
        aliases.set(alias, aliases.has(alias) ? null : tool.name);
      }
    }
    otherNames.set(tools, aliases);
  }
  return aliases.get(name) ?? name;
}

/** A toolset (tools that can change) rather than a tool: it has a version and no execute function. */
function isToolset(source: Tool<any> | Toolset): source is Toolset {
  return (
    typeof source === "object" &&
    source !== null &&
    typeof (source as Tool<any>).execute !== "function" &&
    typeof (source as Toolset).toolsVersion === "number" &&
    Array.isArray((source as Toolset).loadedTools)
  );
}

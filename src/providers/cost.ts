/**
 * The cost of a model call from a maintained price table (`@pydantic/genai-prices`, loaded with the
 * first priced call). A call is priced by the provider it went to: by the provider whose API the
 * base URL names (api.deepseek.com, api.groq.com, …), else by the adapter's own provider (`openai`,
 * `anthropic`, `google`: its official API, or a gateway in front of it); an `openai-compatible`
 * server only by its URL. A model the table does not know is `"unknown"`: never 0.
 */
import type { Usage } from "../usage.js";

type PricesModule = typeof import("@pydantic/genai-prices");
type Provider = NonNullable<PricesModule["findProvider"] extends (...args: never[]) => infer R ? R : never>;

/** How a model's calls are priced: a provider of the price table, or the API URL that names one. */
export interface PriceIdentity {
  providerId?: string;
  providerApiUrl?: string;
}

let prices: Promise<PricesModule> | undefined;

/** What one adapter's calls are priced as; `resolved` is filled by the first priced call. */
export interface PriceTarget {
  modelId: string;
  identities: readonly PriceIdentity[];
  /** The one provider (with only this model) to price with, or null: unknown. */
  resolved?: { provider: Provider } | null;
}

/** The price identities to try, in order, for an adapter's connection (`priceAs` names the provider outright). */
export function priceIdentity(provider: string, official: boolean, baseURL: string | undefined, priceAs?: string): PriceIdentity[] {
  if (priceAs) return [{ providerId: priceAs }];
  const own: PriceIdentity[] = provider === "openai-compatible" ? [] : [{ providerId: provider.startsWith("openai") ? "openai" : provider }];
  if (official || !baseURL) return own;
  return [{ providerApiUrl: baseURL }, ...own];
}

/**
 * Sets `usage.cost` (US dollars, or `"unknown"`) for one call of `modelId`: at once when the table
 * is loaded, else through the returned promise (the first priced call loads it). Cached input is
 * priced as the provider prices it (reads and writes have their own rates); reasoning tokens are output.
 */
export function priceUsage(usage: Usage, target: PriceTarget): Promise<void> | undefined {
  if (usage.cost !== undefined) return undefined;
  if (target.identities.length === 0 || target.resolved === null) {
    usage.cost = "unknown";
    return undefined;
  }
  // Once the table is loaded, a call is priced synchronously (no await on the loop's hot path).
  if (loaded) {
    price(loaded, usage, target);
    return undefined;
  }
  prices ??= import("@pydantic/genai-prices").then((module) => {
    loaded = module;
    return module;
  });
  // A table that cannot load never fails the call: the cost is then unknown.
  return prices.then(
    (module) => price(module, usage, target),
    () => {
      usage.cost = "unknown";
    },
  );
}

let loaded: PricesModule | undefined;

/** Prices one call; whatever the table throws (a usage it refuses) makes the cost unknown. */
function price(module: PricesModule, usage: Usage, target: PriceTarget): void {
  try {
    usage.cost = costOf(module, usage, target);
  } catch {
    usage.cost = "unknown";
  }
}

function costOf({ calcPrice }: PricesModule, usage: Usage, target: PriceTarget): number | "unknown" {
  const table = {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_read_tokens: usage.cachedInputTokens || undefined,
    cache_write_tokens: usage.cacheWriteInputTokens || undefined,
  };
  if (target.resolved === undefined) {
    target.resolved = null;
    for (const identity of target.identities) {
      const found = calcPrice(table, target.modelId, identity);
      if (!found) continue;
      // Later calls search only this provider's entry for this model: the table is searched once.
      target.resolved = { provider: { ...found.provider, models: [found.model] } };
      break;
    }
  }
  if (!target.resolved) return "unknown";
  return calcPrice(table, target.modelId, { provider: target.resolved.provider })?.total_price ?? "unknown";
}

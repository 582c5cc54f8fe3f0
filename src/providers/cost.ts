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
/** Per provider and model: the one provider (with only that model) to price with, or null (unknown). */
const resolved = new Map<string, { provider: Provider } | null>();

/** The price identities to try, in order, for an adapter's connection (`priceAs` names the provider outright). */
export function priceIdentity(provider: string, official: boolean, baseURL: string | undefined, priceAs?: string): PriceIdentity[] {
  if (priceAs) return [{ providerId: priceAs }];
  const own: PriceIdentity[] = provider === "openai-compatible" ? [] : [{ providerId: provider.startsWith("openai") ? "openai" : provider }];
  if (official || !baseURL) return own;
  return [{ providerApiUrl: baseURL }, ...own];
}

/**
 * Sets `usage.cost` (US dollars, or `"unknown"`) for one call of `modelId`. Cached input is priced
 * as the provider prices it (reads and writes have their own rates); reasoning tokens are output.
 */
export async function priceUsage(usage: Usage, modelId: string, identities: readonly PriceIdentity[]): Promise<void> {
  if (usage.cost !== undefined) return;
  if (identities.length === 0) {
    usage.cost = "unknown";
    return;
  }
  prices ??= import("@pydantic/genai-prices");
  const { calcPrice } = await prices;
  const table = {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_read_tokens: usage.cachedInputTokens || undefined,
    cache_write_tokens: usage.cacheWriteInputTokens || undefined,
  };
  const key = `${JSON.stringify(identities)}\u0000${modelId}`;
  let entry = resolved.get(key);
  if (entry === undefined) {
    entry = null;
    for (const identity of identities) {
      const found = calcPrice(table, modelId, identity);
      if (!found) continue;
      // Later calls search only this provider's entry for this model: the table is searched once.
      entry = { provider: { ...found.provider, models: [found.model] } };
      break;
    }
    resolved.set(key, entry);
  }
  usage.cost = entry ? (calcPrice(table, modelId, { provider: entry.provider })?.total_price ?? "unknown") : "unknown";
}

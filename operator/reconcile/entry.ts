// From a Model and its ready endpoints to the catalogue entry the proxies read (core/catalogue).

import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { CatalogueEntryInput, Price, QueueLimits } from '../../core/catalogue/entry.ts';
import { coldStartTimeoutMs, queueLimits } from '../autoscale/policy.ts';
import type { KvEventsAddress } from '../fleet/kv-events.ts';
import { type Model, type ModelSpec, modelSource } from '../model/model.ts';
import { catalogueTokenizer } from './tokenizer.ts';

/** Base URLs of ready endpoints. Kubernetes says a missing `ready` means ready. Sorted, unique. */
export function readyEndpoints(slices: readonly V1EndpointSlice[]): string[] {
  const urls = new Set<string>();
  for (const slice of slices) {
    const port = (slice.ports?.find((p) => p.name === 'http') ?? slice.ports?.[0])?.port;
    if (!port) continue;
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false || endpoint.conditions?.terminating === true) continue;
      for (const address of endpoint.addresses) {
        const host = slice.addressType === 'IPv6' ? `[${address}]` : address;
        urls.add(`http://${host}:${port}`);
      }
    }
  }
  return [...urls].sort();
}

/** Only the price fields of the model's kind; the CRD's CEL rules already forbid the others. */
export function pricingFor(spec: ModelSpec): Record<string, Price> {
  const out: Record<string, Price> = {};
  for (const [currency, p] of Object.entries(spec.pricing)) {
    if (spec.kind === 'image') out[currency] = { perImage: p.perImage ?? '0' };
    else if (spec.kind === 'video') out[currency] = { perSecond: p.perSecond ?? '0' };
    else {
      out[currency] = {
        input: p.input ?? '0',
        ...(p.cachedInput !== undefined ? { cachedInput: p.cachedInput } : {}),
        ...(p.output !== undefined ? { output: p.output } : {}),
      };
    }
  }
  return out;
}

export function unixSeconds(ts: string | Date | undefined): number {
  if (ts === undefined) return 0;
  const ms = ts instanceof Date ? ts.getTime() : Date.parse(ts);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : 0;
}

function coldStart(engine: Model['spec']['engine']): { coldStartTimeoutMs?: number; queue?: QueueLimits } {
  const ms = coldStartTimeoutMs(engine);
  const queue = queueLimits(engine);
  return { ...(ms === undefined ? {} : { coldStartTimeoutMs: ms }), ...(queue ? { queue } : {}) };
}

export function catalogueEntryFor(
  model: Model,
  endpoints: readonly string[],
  source?: string,
  kvEvents: ReadonlyMap<string, KvEventsAddress> = new Map(),
): CatalogueEntryInput {
  const s = model.spec;
  const tokenizer = catalogueTokenizer(s);
  return {
    id: s.id,
    kind: s.kind,
    ...(s.aliases?.length ? { aliases: s.aliases } : {}),
    ...(s.servedName ? { servedName: s.servedName } : {}),
    ...(s.contextLength ? { contextLength: s.contextLength } : {}),
    ...(s.maxOutputTokens ? { maxOutputTokens: s.maxOutputTokens } : {}),
    ...(s.outputLimitPolicy ? { outputLimitPolicy: s.outputLimitPolicy } : {}),
    ...(s.promptBounds ? { promptBounds: s.promptBounds } : {}),
    pricing: pricingFor(s),
    ...(s.batchDiscountPercent !== undefined ? { batchDiscountPercent: s.batchDiscountPercent } : {}),
    availability: s.availability ?? 'available',
    region: s.region ?? 'global',
    tags: s.tags ?? [],
    capabilities: {
      tools: s.capabilities?.tools ?? false,
      vision: s.capabilities?.vision ?? false,
      reasoning: s.capabilities?.reasoning ?? false,
      edit: s.capabilities?.edit ?? false,
      imageToVideo: s.capabilities?.imageToVideo ?? false,
    },
    endpoints: endpoints.map((url) => {
      const kv = kvEvents.get(url);
      return kv ? { url, kvEvents: kv } : { url };
    }),
    // What the proxies tokenize with to route by the engines' KV events (tokenizer.ts).
    ...(tokenizer ? { tokenizer } : {}),
    ...coldStart(s.engine),
    ownedBy: s.ownedBy ?? 'modelplane',
    created: unixSeconds(model.metadata.creationTimestamp),
    source: source ?? modelSource(model),
  };
}

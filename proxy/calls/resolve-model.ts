// Model resolution for a call (SPEC "Catalogue rules"): case-insensitive lookup in the in-memory
// snapshot, then visibility for the caller's account. Unknown, unpriced, coming-soon and
// not-granted invite-only models are all the same 404 model_not_found, so a caller cannot probe
// which models exist. No Redis: the snapshot and the cached principal hold everything.
import type {
  CatalogueEntry,
  CatalogueSnapshot,
  ImagePrice,
  ModelKind,
  TokenPrice,
  VideoPrice,
} from '../../core/catalogue/index.ts';
import { isCallableBy, priceFor } from '../../core/catalogue/index.ts';
import { invalidRequest, modelNotFound } from '../../core/errors.ts';
import type { Principal } from '../auth/key-cache.ts';
import { failed, type RequestTrace } from '../tracing/tracing.ts';

export function visibleEntry(catalogue: CatalogueSnapshot, p: Principal, id: string): CatalogueEntry {
  const entry = catalogue.get(id);
  if (!entry || !isCallableBy(entry, p)) throw modelNotFound(id);
  return entry;
}

const kindRoutes: Record<ModelKind, string> = {
  chat: '/v1/chat/completions',
  embedding: '/v1/embeddings',
  image: '/v1/images/generations',
  video: '/v1/videos',
};

/** A callable text or embedding model with its per-token price in the caller's currency. */
export function tokenModel(
  catalogue: CatalogueSnapshot,
  p: Principal,
  id: string,
  kind: 'chat' | 'embedding',
  trace?: RequestTrace,
): { entry: CatalogueEntry; price: TokenPrice } {
  if (trace !== undefined) return resolveTraced(trace, () => tokenModel(catalogue, p, id, kind));
  const entry = visibleEntry(catalogue, p, id);
  if (entry.kind !== kind) {
    throw invalidRequest(
      `The model '${entry.id}' is ${/^[aeiou]/.test(entry.kind) ? 'an' : 'a'} ${entry.kind} model; call it with ${kindRoutes[entry.kind]}.`,
      'model',
    );
  }
  const price = priceFor(entry, p.currency);
  // A chat model priced per image is a catalogue mistake; hide it rather than bill it wrongly.
  if (price === null || !('input' in price)) throw modelNotFound(id);
  return { entry, price };
}

/** A callable image or video model with its price (per image, per second) in the caller's currency. */
export function mediaModel<K extends 'image' | 'video'>(
  catalogue: CatalogueSnapshot,
  p: Principal,
  id: string,
  kind: K,
  trace?: RequestTrace,
): { entry: CatalogueEntry; price: K extends 'image' ? ImagePrice : VideoPrice } {
  if (trace !== undefined) return resolveTraced(trace, () => mediaModel(catalogue, p, id, kind));
  const entry = visibleEntry(catalogue, p, id);
  if (entry.kind !== kind) {
    throw invalidRequest(
      `The model '${entry.id}' is ${/^[aeiou]/.test(entry.kind) ? 'an' : 'a'} ${entry.kind} model; call it with ${kindRoutes[entry.kind]}.`,
      'model',
    );
  }
  const price = priceFor(entry, p.currency);
  const fits = price !== null && (kind === 'image' ? 'perImage' in price : 'perSecond' in price);
  if (!fits) throw modelNotFound(id);
  return { entry, price: price as K extends 'image' ? ImagePrice : VideoPrice };
}

/** Model resolution as a span of the request's trace (tracing on only). */
function resolveTraced<T extends { entry: CatalogueEntry }>(trace: RequestTrace, resolve: () => T): T {
  const span = trace.start('model resolution');
  try {
    const resolved = resolve();
    span.setAttribute('gen_ai.request.model', resolved.entry.id);
    return resolved;
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

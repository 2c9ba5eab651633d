// Which tokenizer the proxies route a Model's calls with (catalogue `tokenizer`, docs/routing.md
// "Tokenizers"). The proxies cannot read the engines' weight volumes, so a real engine's tokenizer
// is named as a Hugging Face repo the proxy fetches two small files from (`hf:<repo>@<rev>`):
// spec.engine.tokenizer, else the weights' own repo, else engine.model when it names a repo. Only
// engines that publish KV events need one; the kind says which (EngineKind.tokenizer: the
// simulator's is built into the proxy, vLLM's is its weights', llama.cpp publishes none). Pure.
import { engineKind } from '../engines/index.ts';
import type { ModelSpec } from '../model/spec.ts';

/** org/name, optionally @revision. */
export const TOKENIZER_PATTERN =
  '^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@[A-Za-z0-9._/-]{1,128})?$';
const REPO = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function catalogueTokenizer(spec: ModelSpec): string | undefined {
  const engine = spec.engine;
  const kind = engine && engineKind(engine.type).tokenizer;
  if (typeof kind === 'object') return kind.builtin;
  if (!engine || kind !== 'huggingFace' || spec.kind !== 'chat') return undefined;
  if (engine.tokenizer) return `hf:${engine.tokenizer}`;
  const hf = engine.weights?.source.huggingFace;
  if (hf) return `hf:${hf.repo}${hf.revision ? `@${hf.revision}` : ''}`;
  // A path (weights mounted some other way) is the pod's, not the proxy's: no tokenizer then.
  if (engine.model && REPO.test(engine.model)) return `hf:${engine.model}`;
  return undefined;
}

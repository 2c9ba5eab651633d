// Where a model's tokenizer files come from, for the proxy's prefix routing (docs/routing.md
// "Tokenizers"). A catalogue `tokenizer` names either a directory on the proxy's own disk (the local
// runtime, tests) or `hf:<repo>[@<revision>]`: tokenizer.json and tokenizer_config.json fetched
// from the Hugging Face hub (or a mirror, PROXY_TOKENIZER_HUB_URL), as llm-d's KV indexer fetches
// them by model name. In a cluster the weights sit on the engines' volumes, which the proxy does
// not mount; the two small files (a few MB) are all it needs, fetched once per process.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface TokenizerFiles {
  json: unknown;
  config: Record<string, unknown>;
}

export interface HubAccess {
  /** The hub's base URL: https://huggingface.co, or a mirror serving the same /<repo>/resolve/<rev>/<file>. */
  url: string;
  /** HF_TOKEN for gated or private repos; sent only to the hub. */
  token?: string;
}

const HF = /^hf:([A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*)(?:@([A-Za-z0-9._/-]{1,128}))?$/;

export async function tokenizerFiles(spec: string, hub: HubAccess): Promise<TokenizerFiles> {
  const hf = HF.exec(spec);
  const read = hf
    ? (file: string) => fromHub(hub, hf[1] as string, hf[2] ?? 'main', file)
    : (file: string) => readFile(join(spec, file), 'utf8');
  const [json, config] = await Promise.all([read('tokenizer.json'), read('tokenizer_config.json')]);
  return { json: JSON.parse(json), config: JSON.parse(config) as Record<string, unknown> };
}

async function fromHub(hub: HubAccess, repo: string, revision: string, file: string): Promise<string> {
  const url = `${hub.url.replace(/\/$/, '')}/${repo}/resolve/${encodeURIComponent(revision)}/${file}`;
  const res = await fetch(url, {
    headers: hub.token ? { authorization: `Bearer ${hub.token}` } : {},
    signal: AbortSignal.timeout(60_000),
  });
  // The error names the URL, never the token.
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.text();
}

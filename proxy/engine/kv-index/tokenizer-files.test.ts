// A catalogue `tokenizer: hf:<repo>@<rev>` (operator/reconcile/tokenizer.ts, what the operator names for a vLLM
// Model in a cluster): the proxy fetches the two files from the hub's /<repo>/resolve/<rev>/ path —
// here a real HTTP server on loopback standing in for the hub — and tokenizes with them.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPromptTokenizer } from './prompt-tokens.ts';

const words = ['[UNK]', 'user', 'assistant', 'hello', 'there', 'again'];
const files: Record<string, unknown> = {
  'tokenizer.json': {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      {
        id: 0,
        content: '[UNK]',
        special: true,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
      },
    ],
    normalizer: null,
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: null,
    decoder: null,
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(words.map((w, i) => [w, i])),
    },
  },
  'tokenizer_config.json': {
    chat_template:
      '{% for m in messages %}{{ m.role }} {{ m.content }} {% endfor %}{% if add_generation_prompt %}assistant{% endif %}',
  },
};

let hub: Server;
let hubUrl: string;
const asked: { url: string; headers: IncomingHttpHeaders }[] = [];

beforeAll(async () => {
  hub = createServer((req, res) => {
    asked.push({ url: req.url ?? '', headers: req.headers });
    const m = /^\/Org\/Tok\/resolve\/v2\/(.+)$/.exec(req.url ?? '');
    const body = m ? files[m[1] as string] : undefined;
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
  hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => hub.close(() => resolve())));

describe('tokenizers fetched from a hub', () => {
  it('hf:<repo>@<rev>: both files from /<repo>/resolve/<rev>/, with the token; the chat template applied', async () => {
    const tokenize = await loadPromptTokenizer('hf:Org/Tok@v2', { url: hubUrl, token: 'hf_secret' });
    const ids = tokenize({ messages: [{ role: 'user', content: 'hello there again' }] });
    expect(ids).toEqual([1, 3, 4, 5, 2]);
    expect(asked.map((a) => a.url).sort()).toEqual([
      '/Org/Tok/resolve/v2/tokenizer.json',
      '/Org/Tok/resolve/v2/tokenizer_config.json',
    ]);
    expect(asked.every((a) => a.headers.authorization === 'Bearer hf_secret')).toBe(true);
  });

  it('a repo the hub does not have fails with the URL and status, never the token', async () => {
    const failed = await loadPromptTokenizer('hf:Org/Missing', { url: hubUrl, token: 'hf_secret' }).catch(
      (e: Error) => e,
    );
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).message).toContain('/Org/Missing/resolve/main/');
    expect((failed as Error).message).toContain('404');
    expect((failed as Error).message).not.toContain('hf_secret');
  });
});

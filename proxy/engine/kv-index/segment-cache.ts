// Encoding a rendered chat prompt without re-encoding the history every turn. A multi-turn session
// resends the same system prompt, tools and past messages each time; encoding them again costs
// ~2.5 µs a token with a 131k-vocabulary BPE (bench/RESULTS.md), tens of ms for an agent's prompt.
//
// Where it is safe to cut: the tokenizer itself first splits the text on its added tokens (the
// template's <|im_start|>, [INST], …) and encodes each piece between them on its own — the
// normalizer, pre-tokenizer and BPE never see across an added token (HF tokenizers'
// AddedVocabulary; @huggingface/tokenizers' encode_text). So the text cut just before an added
// token encodes to the same ids as a whole, unless that token strips the whitespace before it
// (lstrip) or the token before it strips what follows (rstrip): then the cut is not taken. Each
// piece's ids are kept in an LRU keyed by the piece's text: the shared system prompt and every past
// message hit, across sessions too; only the new turn is encoded. prompt-tokens.test.ts checks the
// ids equal a whole encode, with real tokenizer.json files.

export interface AddedTokenSpec {
  content: string;
  lstrip?: boolean;
  rstrip?: boolean;
  normalized?: boolean;
  special?: boolean;
}

/** Pieces shorter than this are encoded each time: a map entry costs more than they do. */
const MIN_CACHED_CHARS = 64;

export class SegmentCache {
  private readonly cut: RegExp | null;
  private readonly strips: Map<string, { lstrip: boolean; rstrip: boolean }>;
  private readonly lru = new Map<string, Uint32Array>();
  private tokens = 0;
  readonly stats = { hits: 0, misses: 0, hitTokens: 0, missTokens: 0 };
  // Plain fields, not parameter properties: worker threads load this file with Node's own type
  // stripping, which takes erasable syntax only.
  private readonly encode: (text: string) => number[];
  private readonly maxTokens: number;

  constructor(
    encode: (text: string) => number[],
    tokenizerJson: { added_tokens?: AddedTokenSpec[]; normalizer?: unknown },
    maxTokens: number,
  ) {
    this.encode = encode;
    this.maxTokens = maxTokens;
    // The tokens the tokenizer splits on before normalizing (its "unnormalized" splitter): those
    // not normalized, or all of them when there is no normalizer.
    const normalizes = tokenizerJson.normalizer !== null && tokenizerJson.normalizer !== undefined;
    const unnormalized = (tokenizerJson.added_tokens ?? []).filter(
      (t) => !normalizes || !(t.normalized ?? !t.special),
    );
    this.strips = new Map(
      unnormalized.map((t) => [t.content, { lstrip: t.lstrip ?? false, rstrip: t.rstrip ?? false }]),
    );
    // Longest first: a regex alternation tried in order at each position is the tokenizer's
    // leftmost-longest trie match.
    const alternatives = unnormalized
      .map((t) => t.content)
      .filter((c) => c.length > 0)
      .sort((a, b) => b.length - a.length)
      .map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    this.cut = maxTokens > 0 && alternatives.length > 0 ? new RegExp(alternatives.join('|'), 'g') : null;
  }

  /** The ids of `text`, equal to encode(text). */
  ids(text: string): number[] {
    if (this.cut === null) return this.encode(text);
    const out: number[] = [];
    let from = 0;
    let previous = { end: -1, rstrip: false };
    this.cut.lastIndex = 0;
    for (let m = this.cut.exec(text); m !== null; m = this.cut.exec(text)) {
      const token = this.strips.get(m[0]) ?? { lstrip: true, rstrip: true };
      // An added token right after one that strips what follows it would be trimmed by it.
      const trimmed = previous.rstrip && previous.end === m.index;
      if (m.index > from && !token.lstrip && !trimmed) {
        this.piece(text.slice(from, m.index), out);
        from = m.index;
      }
      previous = { end: m.index + m[0].length, rstrip: token.rstrip };
    }
    this.piece(text.slice(from), out);
    return out;
  }

  private piece(text: string, out: number[]): void {
    if (text.length < MIN_CACHED_CHARS) {
      for (const id of this.encode(text)) out.push(id);
      return;
    }
    let ids = this.lru.get(text);
    if (ids === undefined) {
      ids = Uint32Array.from(this.encode(text));
      this.stats.misses++;
      this.stats.missTokens += ids.length;
      this.remember(text, ids);
    } else {
      // Most recently used last: a Map iterates in insertion order.
      this.lru.delete(text);
      this.lru.set(text, ids);
      this.stats.hits++;
      this.stats.hitTokens += ids.length;
    }
    for (let i = 0; i < ids.length; i++) out.push(ids[i] as number);
  }

  private remember(text: string, ids: Uint32Array): void {
    if (ids.length > this.maxTokens) return;
    this.lru.set(text, ids);
    this.tokens += ids.length;
    for (const [key, old] of this.lru) {
      if (this.tokens <= this.maxTokens) break;
      this.lru.delete(key);
      this.tokens -= old.length;
    }
  }
}

// Small real tokenizer.json files, written to a directory as a model ships them, in the two shapes
// chat models use: a byte-level BPE with a regex pre-tokenizer and ChatML added tokens (Qwen,
// Llama 3, Mistral's Tekken), and a Metaspace BPE with [INST] tokens (Llama 2, Mistral v1). Their
// merges are made from a word list (each listed word one token), so encoding does real BPE work,
// and an added token that strips whitespace to its left (lstrip) is there to be tripped over.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const WORDS = [
  'the',
  'quick',
  'brown',
  'fox',
  'agent',
  'tool',
  'tools',
  'file',
  'read',
  'write',
  'code',
  'weather',
  'Paris',
  'Berlin',
  'function',
  'return',
  'city',
  'you',
  'are',
  'turn',
  'look',
  'and',
  'fix',
  'it',
  'system',
  'user',
  'assistant',
  'rule',
  'name',
  'arguments',
  'degrees',
  'clear',
  'ts',
  '{"',
  '":',
];

/** GPT-2's byte → printable character map (every byte-level BPE uses it). */
function byteChars(): string[] {
  const keep = new Set<number>();
  for (let b = 33; b <= 126; b++) keep.add(b);
  for (let b = 161; b <= 172; b++) keep.add(b);
  for (let b = 174; b <= 255; b++) keep.add(b);
  const out: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCharCode(keep.has(b) ? b : 256 + n++));
  return out;
}

/** Vocab and merges that make each word one token, built up a character at a time. */
function bpe(base: string[], words: string[]): { vocab: Record<string, number>; merges: string[] } {
  const vocab: Record<string, number> = {};
  for (const c of base) vocab[c] ??= Object.keys(vocab).length;
  const merges: string[] = [];
  for (const w of words) {
    const chars = Array.from(w);
    let left = chars[0] as string;
    for (const c of chars.slice(1)) {
      const merged = left + c;
      if (vocab[merged] === undefined) {
        merges.push(`${left} ${c}`);
        vocab[merged] = Object.keys(vocab).length;
      }
      left = merged;
    }
  }
  return { vocab, merges };
}

const HEAD = { version: '1.0', truncation: null, padding: null };

function added(content: string, id: number, o: { lstrip?: boolean; special?: boolean } = {}) {
  return {
    id,
    content,
    single_word: false,
    lstrip: o.lstrip ?? false,
    rstrip: false,
    normalized: false,
    special: o.special ?? true,
  };
}

/** The tiny vLLM model's template (test/engines/vllm/make-tiny-model.py): tools, calls, results. */
const CHATML = [
  '{%- if tools %}<|im_start|>system\nYou may call these tools:\n',
  '{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}<|im_end|>\n{%- endif %}',
  '{%- for message in messages %}',
  "{%- if message.role == 'assistant' and message.tool_calls %}<|im_start|>assistant\n",
  '{%- if message.content %}{{ message.content }}{% endif %}',
  '{%- for call in message.tool_calls %}\n<tool_call>{{ call.function | tojson }}</tool_call>{%- endfor %}',
  "<|im_end|>{{ '\\n' }}",
  "{%- else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>{{ '\\n' }}",
  '{%- endif %}{%- endfor %}',
  '{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}',
].join('');

const QWEN_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** A byte-level BPE with ChatML tokens, in a fresh directory; returns the directory. */
export function byteLevelTokenizerDir(): string {
  const chars = byteChars();
  const enc = (s: string) =>
    Array.from(Buffer.from(s, 'utf8'))
      .map((b) => chars[b])
      .join('');
  const { vocab, merges } = bpe(chars, [...WORDS, ...WORDS.map((w) => ` ${w}`)].map(enc));
  const n = Object.keys(vocab).length;
  const tokens = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((t, i) => added(t, n + i));
  tokens.push(
    added('<tool_call>', n + 3, { special: false }),
    added('</tool_call>', n + 4, { special: false }),
  );
  tokens.push(added('<|mask|>', n + 5, { lstrip: true }));
  return write({
    json: {
      ...HEAD,
      added_tokens: tokens,
      normalizer: { type: 'NFC' },
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: QWEN_SPLIT }, behavior: 'Isolated', invert: false },
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
        ],
      },
      post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        fuse_unk: false,
        byte_fallback: false,
        vocab,
        merges,
      },
    },
    config: { chat_template: CHATML, eos_token: '<|im_end|>' },
  });
}

/** A Metaspace BPE (SentencePiece-style ▁ words) with [INST] tokens; returns the directory. */
export function metaspaceTokenizerDir(): string {
  const letters = Array.from(new Set(WORDS.join('').split(''))).concat(['▁', '<unk>']);
  const { vocab, merges } = bpe(
    letters,
    WORDS.map((w) => `▁${w}`),
  );
  const n = Object.keys(vocab).length;
  const tokens = ['<s>', '</s>', '[INST]', '[/INST]'].map((t, i) => added(t, n + i));
  return write({
    json: {
      ...HEAD,
      added_tokens: tokens,
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false },
      post_processor: null,
      decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: '<unk>',
        fuse_unk: true,
        byte_fallback: false,
        vocab,
        merges,
      },
    },
    config: {
      chat_template:
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'assistant' %}{{ m.content }}{{ eos_token }}{% else %}[INST] {{ m.content }} [/INST]{% endif %}{% endfor %}",
      bos_token: '<s>',
      eos_token: '</s>',
    },
  });
}

function write(files: { json: unknown; config: unknown }): string {
  const dir = mkdtempSync(join(tmpdir(), 'tokenizer-'));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(files.json));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(files.config));
  return dir;
}

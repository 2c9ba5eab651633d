// Pure price math: catalogue prices (decimal strings) × usage → integer nano-units.
// Prices are parsed exactly by parseDecimalToNano and multiplied in BigInt, so no step is ever
// floating point. Results are rounded UP to the nano once, at the end: a per-token rate such as
// 0.15 per 1M is 0.15 nano per token, and rounding down would make small calls free; rounding up
// once (never per term) overcharges by less than one nano-unit per call, and keeps every hold
// computed here an upper bound of the cost it covers.
import type { ImagePrice, TokenPrice, VideoPrice } from '../catalogue/entry.ts';
import { MAX_SAFE_NANO, parseDecimalToNano } from '../money.ts';

const PER_MILLION = 1_000_000n;

interface TokenRates {
  input: bigint;
  cached: bigint;
  output: bigint;
}

// Parsed once per price object: catalogue prices are never mutated (a catalogue change brings new
// objects), and the hot path prices every request twice (hold, then settle).
const rateCache = new WeakMap<TokenPrice, TokenRates>();

function rates(price: TokenPrice): TokenRates {
  let r = rateCache.get(price);
  if (r === undefined) {
    r = parseRates(price);
    rateCache.set(price, r);
  }
  return r;
}

/** Nano per 1M tokens. Cached input defaults to the input price, output to 0 (embeddings). */
function parseRates(price: TokenPrice): TokenRates {
  const input = BigInt(parseDecimalToNano(price.input));
  return {
    input,
    cached: price.cachedInput === undefined ? input : BigInt(parseDecimalToNano(price.cachedInput)),
    output: price.output === undefined ? 0n : BigInt(parseDecimalToNano(price.output)),
  };
}

// Math.min/max do not take BigInt.
function smaller(a: bigint, b: bigint): bigint {
  if (a < b) return a;
  return b;
}

function larger(a: bigint, b: bigint): bigint {
  if (a > b) return a;
  return b;
}

function ceilDiv(n: bigint, d: bigint): bigint {
  return (n + d - 1n) / d;
}

function toNano(v: bigint, what: string): number {
  if (v > BigInt(MAX_SAFE_NANO)) throw new RangeError(`${what} cost ${v} nano passes 2^53`);
  return Number(v);
}

function tokens(name: string, v: number): bigint {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative integer`);
  return BigInt(v);
}

/**
 * (input − cached)·rate_in + cached·rate_cached + output·rate_out, rates per 1M tokens.
 * Cached tokens are a subset of input tokens (BILL-2); an engine reporting more cached than input
 * is clamped to input rather than billed for tokens that were never sent.
 */
export function textCost(
  price: TokenPrice,
  u: { inputTokens: number; cachedTokens: number; outputTokens: number },
): number {
  return toNano(textCostNano(price, u), 'text');
}

/**
 * textCost, but a cost past 2^53 nano (absurd usage from an engine) is MAX_SAFE_NANO instead of an
 * error: a settlement runs after the answer was sent and must not throw. The scripts charge at
 * most what the balance holds anyway.
 */
export function textCostSaturating(
  price: TokenPrice,
  u: { inputTokens: number; cachedTokens: number; outputTokens: number },
): number {
  const v = textCostNano(price, u);
  return v > BigInt(MAX_SAFE_NANO) ? MAX_SAFE_NANO : Number(v);
}

function textCostNano(
  price: TokenPrice,
  u: { inputTokens: number; cachedTokens: number; outputTokens: number },
): bigint {
  const r = rates(price);
  const input = tokens('inputTokens', u.inputTokens);
  const cachedRaw = tokens('cachedTokens', u.cachedTokens);
  const cached = smaller(cachedRaw, input);
  const output = tokens('outputTokens', u.outputTokens);
  const scaled = (input - cached) * r.input + cached * r.cached + output * r.output;
  return ceilDiv(scaled, PER_MILLION);
}

/** Per generation × n. */
export function imageCost(price: ImagePrice, n: number): number {
  return toNano(BigInt(parseDecimalToNano(price.perImage)) * tokens('n', n), 'image');
}

/**
 * Per second × seconds. Seconds are usually whole; a fractional length is billed to the
 * millisecond (rounded to the nearest ms, then the price rounded up to the nano).
 */
export function videoCost(price: VideoPrice, seconds: number): number {
  if (!Number.isFinite(seconds) || seconds < 0) throw new RangeError('seconds must be a non-negative number');
  const perSecond = BigInt(parseDecimalToNano(price.perSecond));
  if (Number.isInteger(seconds)) return toNano(perSecond * tokens('seconds', seconds), 'video');
  const ms = tokens('seconds', Math.round(seconds * 1000));
  return toNano(ceilDiv(perSecond * ms, 1000n), 'video');
}

/**
 * The hold for a text call. `promptTokens` is an upper bound of the prompt's tokens (the proxy
 * counts its text bytes, its images and the chat template: proxy/billing/text-quote.ts); they are
 * priced at the dearer of the input and cached-input rates because the split is unknown before
 * the engine answers. min covers the input alone, max adds maxOutputTokens of output.
 */
export function textHold(
  price: TokenPrice,
  a: { promptTokens: number; maxOutputTokens: number },
): { min: number; max: number } {
  const r = rates(price);
  const min = inputBound(r, tokens('promptTokens', a.promptTokens));
  const out = ceilDiv(tokens('maxOutputTokens', a.maxOutputTokens) * r.output, PER_MILLION);
  return { min: toNano(min, 'hold'), max: toNano(min + out, 'hold') };
}

/**
 * How many output tokens `held` pays for once the input bound is taken out: the proxy lowers
 * max_tokens to this when the balance cannot cover the asked-for output. Free output (embeddings,
 * rate 0) is unbounded by money, reported as Number.MAX_SAFE_INTEGER.
 */
export function maxTokensCovered(price: TokenPrice, a: { held: number; promptTokens: number }): number {
  const r = rates(price);
  const held = tokens('held', a.held);
  const remaining = held - inputBound(r, tokens('promptTokens', a.promptTokens));
  if (remaining < 0n) return 0;
  if (r.output === 0n) return Number.MAX_SAFE_INTEGER;
  // ceil(n·rate/1M) ≤ remaining  ⟺  n ≤ remaining·1M/rate, since remaining is an integer.
  const n = (remaining * PER_MILLION) / r.output;
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
}

function inputBound(r: TokenRates, promptTokens: bigint): bigint {
  const rate = larger(r.cached, r.input);
  return ceilDiv(promptTokens * rate, PER_MILLION);
}

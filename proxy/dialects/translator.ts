// What a dialect is to the one stream relay (../calls/relay.ts): a translator per streamed call,
// in the style of Envoy AI Gateway's per-pair translators. The relay owns reading the engine's
// SSE, usage, settlement, stalls and the last write; a translator only turns engine frames into
// the client's bytes, and says how its stream opens, ends and fails. Adding a dialect is one
// translator (and its request and whole-answer mapping), not another relay.
import type { FastifyReply } from 'fastify';
import type { ApiError } from '../../core/errors.ts';
import type { FastFrame } from '../engine/frames/index.ts';
import type { CallCost, TextUsage } from '../usage.ts';

export type { FastFrame };

export interface StreamTranslator {
  /**
   * Keep-alive bytes for a stream whose engine is silent, or null when the dialect has none; a
   * dialect with one also gets its head written early, before a slow engine's first frame
   * (../calls/early-head.ts).
   */
  readonly ping: string | null;
  /** The bytes that open the stream, with the usage known so far ('' for none). */
  head(usage: TextUsage | null): string;
  /**
   * A frame in the engines' usual shape (one `data: {…}\n\n` block), its client bytes pushed onto
   * `out` without a parse; undefined when the frame is not in that shape (it is parsed, then given
   * to `chunk`, which must give the same bytes).
   */
  fast(block: Buffer, out: Buffer[]): FastFrame | undefined;
  /** A parsed engine chunk (never an error frame: the relay ends the stream on those). */
  chunk(chunk: Record<string, unknown>, out: Buffer[]): void;
  /** The last bytes of a stream the engine finished; `usage` is what was billed, `cost` its bill. */
  end(usage: TextUsage, cost: CallCost): Buffer;
  /**
   * The in-band error that ends a stream after its head (the SDKs raise it); `billed` is what the
   * relay charged for the part that was generated (absent when nothing was: an early head's
   * failure before the engine's first frame).
   */
  error(err: ApiError, requestId: string, billed?: { usage: TextUsage; cost: CallCost }): Buffer;
}

/**
 * What a dialect brings to a text call (../calls/text-call.ts): its whole answer, read from the
 * engine's body once, and for streams its translator. `A` is the dialect's reading of the body.
 */
export interface TextDialect<A> {
  /** The engine's whole answer, read once: the dialect's form of it and the engine's usage object. */
  read(bytes: Buffer): { answer: A; usage: unknown };
  /** The output an answer generated, in UTF-8 bytes (counted when the engine reports no usage). */
  outputBytes(answer: A): number;
  /**
   * Sends a whole answer; `usage` is what was billed (a dialect that reports usage reports this),
   * `cost` its bill (usage.cost and usage.currency, ../usage.ts CallCost).
   */
  send(reply: FastifyReply, answer: A, usage: TextUsage, cost: CallCost): void;
  /** A streamed call's translator (one per call: the early head and the relay share it). */
  translator(): StreamTranslator;
  /** The prompt's input tokens as the proxy estimates them, for an early head (dialects that ping). */
  estimateInput?(): number;
}

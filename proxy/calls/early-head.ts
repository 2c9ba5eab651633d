// A stream's head before the engine's first frame, for a dialect whose stream can ping (Messages,
// MSG-2, MSG-7). The head waits for the engine's first frame, so an engine that dies before it
// fails over or gets a real, retryable 5xx (nothing charged) — unless the engine stays silent:
// once the hold covers the call and a whole ping interval (PROXY_MESSAGES_PING_MS) has passed with
// no first frame (one to two intervals: a queue, a long prefill), the head, the translator's
// opening bytes (input tokens estimated; the end reports the true counts) and a ping go out, and
// pings follow while the engine is silent, so clients and the proxies between see a live stream.
// From the head on, a failure is the translator's in-band error. A fast engine's stream is written
// exactly as without it: head, opening bytes and the first content in one write (./relay.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { logFailure, toApiError } from '../../http/errors.ts';
import type { Charge } from '../billing/charge.ts';
import type { StreamTranslator } from '../dialects/translator.ts';
import { openEventStream } from './event-stream.ts';

/**
 * Registered with the pinger as the hold is sought; after a whole silent interval with the hold
 * covering the call, it writes the head, the opening bytes and a ping, then a ping per silent
 * interval. The relay takes the same watch over.
 */
export class EarlyHead {
  /** The response, once its head is out. */
  res: FastifyReply['raw'] | null = null;
  private watched: (Watched & { stop(): void }) | undefined;
  private readonly keepAlive: string;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly translator: StreamTranslator,
    private readonly o: {
      charge: Charge;
      /** The prompt's tokens as the proxy estimates them, for an early head. */
      estimateInput: () => number;
      pingMs: number;
      /**
       * Watching from the start (a dialect that pings) or only once `arm` is called: a call held
       * for a cold model (issue 32) arms it, so every dialect's client sees a live stream while the
       * model wakes — Messages its `ping` events, the others SSE comment frames, which the SDKs skip.
       */
      armed: boolean;
    },
  ) {
    this.keepAlive = translator.ping ?? KEEP_ALIVE_COMMENT;
    if (o.armed) this.arm();
  }

  /** Starts the watch (idempotent). Not quiet yet: the first tick only starts the interval, so a head goes out after a whole one. */
  arm(): void {
    this.watched ??= pinger(this.o.pingMs).watch(() => this.silent(), false);
  }

  private silent(): void {
    if (this.res !== null) {
      if (!this.res.destroyed) this.res.write(this.keepAlive);
      return;
    }
    // Not before the hold covers the call (a 429 must still be a status), nor to a client gone.
    if (!this.o.charge.covered || this.reply.raw.destroyed) return;
    this.res = openEventStream(this.reply);
    const usage = { inputTokens: this.o.estimateInput(), cachedTokens: 0, outputTokens: 0 };
    this.res.write(this.translator.head(usage) + this.keepAlive);
  }

  /** The first frame is in: the relay's pings go through `ping` from now on (none if never armed). */
  handOver(ping: () => void): (Watched & { stop(): void }) | undefined {
    const watched = this.watched;
    if (watched === undefined) return undefined;
    watched.ping = ping;
    watched.quiet = false;
    return watched;
  }

  /**
   * The call failed before the engine's first frame. True when the failure is answered already
   * (the head was out, so it went in-band, or the client is gone); false when nothing was written
   * and the error is to be sent as an ordinary response.
   */
  failed(thrown: unknown): boolean {
    this.watched?.stop();
    const res = this.reply.raw;
    if (!res.headersSent) return false;
    if (!res.writableEnded && !res.destroyed) {
      const err = toApiError(thrown);
      logFailure(this.request, thrown, err);
      res.end(this.translator.error(err, this.request.id));
    }
    return true;
  }
}

/** An SSE comment: every SSE parser drops it, and it keeps the connection visibly alive. */
const KEEP_ALIVE_COMMENT = ': keep-alive\n\n';

interface Watched {
  /** Cleared by each engine frame; a tick that finds it still set pings. */
  quiet: boolean;
  ping(): void;
}

/**
 * One timer for every pinging stream of a process (per interval), instead of one per stream:
 * each tick pings the streams that stayed silent since the last tick, so a silent stream gets a
 * ping within one to two intervals.
 */
class Pinger {
  private readonly streams = new Set<Watched>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly intervalMs: number) {}

  /** `quiet`: whether the stream counts as silent from now (false: a frame just came). */
  watch(ping: () => void, quiet: boolean): Watched & { stop(): void } {
    const w = { quiet, ping, stop: () => this.unwatch(w) };
    this.streams.add(w);
    if (this.timer === null) {
      this.timer = setInterval(() => this.tick(), this.intervalMs);
      this.timer.unref();
    }
    return w;
  }

  private unwatch(w: Watched): void {
    this.streams.delete(w);
    if (this.streams.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private tick(): void {
    for (const w of this.streams) {
      if (w.quiet) w.ping();
      w.quiet = true;
    }
  }
}

const pingers = new Map<number, Pinger>();
function pinger(intervalMs: number): Pinger {
  let p = pingers.get(intervalMs);
  if (p === undefined) {
    p = new Pinger(intervalMs);
    pingers.set(intervalMs, p);
  }
  return p;
}

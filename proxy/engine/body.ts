// An engine response body in push mode, fed by an undici dispatch handler (./client.ts). undici's
// `request()` wraps every body in a Readable that the proxy then read through an async iterator:
// one stream object, several promises and a microtask hop per chunk, which was a large share of
// the proxy's CPU on short streams. Here chunks go straight to one consumer: the whole body as
// text, or a sink that sees each chunk synchronously and pauses the engine socket for backpressure.
// Chunks that arrive before a consumer attaches (often in the same socket read as the headers)
// are kept and replayed.

import { Readable } from 'node:stream';

export interface BodySink {
  /** One chunk; return false to pause the engine until `resume()`. */
  data(chunk: Buffer): boolean;
  end(): void;
  error(err: Error): void;
}

export interface BodyControl {
  pause(): void;
  resume(): void;
  abort(reason: Error): void;
}

export class EngineBody {
  private queued: Buffer[] = [];
  private ended = false;
  private failure: Error | null = null;
  private sink: BodySink | null = null;
  private replaying = false;
  private pausedBySink = false;

  constructor(private readonly control: BodyControl) {}

  // ---- fed by the dispatch handler ----

  push(chunk: Buffer): void {
    if (this.sink === null || this.replaying) {
      this.queued.push(chunk);
      return;
    }
    if (!this.sink.data(chunk)) this.pause();
  }

  finish(): void {
    this.ended = true;
    if (this.sink !== null && !this.replaying) this.sink.end();
  }

  fail(err: Error): void {
    if (this.ended || this.failure !== null) return;
    this.failure = err;
    if (this.sink !== null && !this.replaying) this.sink.error(err);
  }

  // ---- the consumer's side ----

  /** Attaches the one consumer: queued chunks first, synchronously, then live ones. */
  consume(sink: BodySink): void {
    if (this.sink !== null) throw new Error('engine body already consumed');
    this.sink = sink;
    this.replaying = true;
    // A sink that pauses mid-replay still gets the queue: the engine is what pauses, and what is
    // already here is cheaper to hand over than to hold. Chunks pushed while the replay runs (a
    // resume inside the sink can make the engine deliver at once) join the queue and are replayed
    // in turn, so order holds.
    while (this.queued.length > 0) {
      const queued = this.queued;
      this.queued = [];
      for (const chunk of queued) if (!sink.data(chunk)) this.pause();
    }
    this.replaying = false;
    if (this.failure !== null) sink.error(this.failure);
    else if (this.ended) sink.end();
  }

  pause(): void {
    if (this.pausedBySink || this.ended || this.failure !== null) return;
    this.pausedBySink = true;
    this.control.pause();
  }

  resume(): void {
    if (!this.pausedBySink) return;
    this.pausedBySink = false;
    this.control.resume();
  }

  /** Stops the engine request (closes its connection); the consumer sees `reason` as an error. */
  destroy(reason: Error = new Error('engine body destroyed')): void {
    if (this.ended || this.failure !== null) return;
    this.control.abort(reason);
    this.fail(reason);
  }

  /** The whole body's bytes. */
  bytes(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      this.consume({
        data: (c) => {
          chunks.push(c);
          return true;
        },
        end: () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)),
        error: reject,
      });
    });
  }

  /**
   * The body as a Readable, for the rare consumer that pipes it somewhere (a finished video into
   * the object store): the engine is paused while the Readable's buffer is full.
   */
  readable(): Readable {
    const out = new Readable({ read: () => this.resume(), highWaterMark: 1 << 20 });
    this.consume({
      data: (c) => out.push(c),
      end: () => out.push(null),
      error: (err) => out.destroy(err),
    });
    return out;
  }

  /** The whole body as UTF-8 text. */
  async text(): Promise<string> {
    return (await this.bytes()).toString('utf8');
  }

  /** Reads the body to its end and forgets it, so the connection is reused. */
  dump(): Promise<void> {
    return new Promise((resolve) => {
      this.consume({ data: () => true, end: resolve, error: () => resolve() });
    });
  }
}

// An engine's server-sent events in push mode: body chunks (./body.ts) are decoded (./sse.ts) and
// handed to one listener synchronously, a whole engine read at a time, so relaying a stream costs
// no promise or microtask per frame. Events that arrive with no listener attached (the rest of the
// read that held the first frame, while the response head is being decided) are queued and the
// engine is paused until a listener takes them.
import type { EngineBody } from './body.ts';
import { SseDecoder, type SseEvent } from './sse.ts';

export interface EventListener {
  event(ev: SseEvent): void;
  /** After the events of one engine read: the moment to write what they produced. */
  batchEnd?(): void;
  /** The body ended (whatever its last event was). */
  end(): void;
  error(err: Error): void;
}

export class EngineEvents {
  private readonly decoder = new SseDecoder();
  private queue: SseEvent[] = [];
  private ended = false;
  private failure: Error | null = null;
  private listener: EventListener | null = null;
  /** The engine is paused because nobody was listening. */
  private held = false;

  constructor(private readonly body: EngineBody) {
    body.consume({
      data: (chunk) => this.deliver(this.decoder.push(chunk)),
      end: () => {
        const last = this.decoder.flush();
        if (last) this.deliver([last]);
        this.ended = true;
        if (this.listener !== null && this.queue.length === 0) this.listener.end();
      },
      error: (err) => {
        this.failure = err;
        if (this.listener !== null && this.queue.length === 0) this.listener.error(err);
      },
    });
  }

  /** Attaches the listener: queued events first, then live ones as they come. */
  listen(listener: EventListener): void {
    this.listener = listener;
    if (this.held) {
      // Resumed before the replay, so a listener that pauses during it stays paused.
      this.held = false;
      this.body.resume();
    }
    const queued = this.queue;
    this.queue = [];
    if (queued.length > 0 && !this.deliver(queued)) return;
    if (this.listener !== listener) return;
    if (this.failure !== null) listener.error(this.failure);
    else if (this.ended) listener.end();
  }

  /** The next event, or null when the body ends first; the events after it stay queued. */
  next(): Promise<SseEvent | null> {
    return new Promise((resolve, reject) => {
      this.listen({
        event: (ev) => {
          this.listener = null;
          resolve(ev);
        },
        end: () => resolve(null),
        error: reject,
      });
    });
  }

  pause(): void {
    this.body.pause();
  }

  resume(): void {
    this.body.resume();
  }

  /** Hands `events` to the listener in order; false (and the rest queued) once it detaches. */
  private deliver(events: SseEvent[]): boolean {
    const l = this.listener;
    for (let i = 0; i < events.length; i++) {
      if (this.listener !== l || l === null) {
        for (let j = i; j < events.length; j++) this.queue.push(events[j]!);
        this.held = true;
        return false; // nobody listening: hold the engine until someone is
      }
      l.event(events[i]!);
    }
    if (l === null) {
      this.held = true;
      return false;
    }
    l.batchEnd?.();
    return true;
  }
}

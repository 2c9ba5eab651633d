// One engine's KV-event stream: a ZMQ SUB socket on its PUB address, batches applied in sequence
// order. vLLM numbers every batch; a number skipped means batches were lost (the PUB socket drops
// past its high-water mark, or we connected late), so the missing ones are asked for on the replay
// ROUTER socket — and when the engine has no replay socket, or its buffer no longer holds them,
// the stream resyncs: everything the index held for this endpoint is dropped and learnt afresh from
// the next events (stale blocks would route calls to an engine that no longer holds them; a
// forgotten block only costs one less-informed pick). A batch numbered 0 after others means the
// engine restarted: its cache is empty, so the same drop.
import { Dealer, Subscriber } from 'zeromq';
import { decodeEventBatch, type KvEvent } from './wire.ts';

export interface EventStreamOptions {
  url: string;
  replayUrl: string | null;
  /** Topic prefix to subscribe to ('' = all). */
  topic: string;
  onEvents: (events: KvEvent[]) => void;
  /** The index must forget this endpoint's blocks (gap not replayable, engine restarted). */
  onResync: (reason: string) => void;
  onError: (err: unknown) => void;
  /** How long a replay may take before the stream resyncs instead. */
  replayTimeoutMs?: number;
}

export class EventStream {
  private readonly sub = new Subscriber({ receiveHighWaterMark: 100_000 });
  /** The last batch applied; -1 before any. */
  private last = -1;
  private closed = false;
  resyncs = 0;
  replays = 0;

  constructor(private readonly o: EventStreamOptions) {
    this.sub.connect(o.url);
    this.sub.subscribe(o.topic);
    void this.run();
  }

  close(): void {
    this.closed = true;
    this.sub.close();
  }

  private async run(): Promise<void> {
    try {
      for await (const [, seqFrame, payload] of this.sub) {
        if (seqFrame === undefined || payload === undefined || seqFrame.length !== 8) continue;
        await this.receive(Number(seqFrame.readBigInt64BE(0)), payload);
      }
    } catch (err) {
      if (!this.closed) this.o.onError(err);
    }
  }

  private async receive(seq: number, payload: Buffer): Promise<void> {
    if (seq === 0 && this.last >= 0) this.resync('engine restarted (sequence back to 0)');
    else if (seq <= this.last) return; // already applied (a replay overlapped the live stream)
    if (seq > this.last + 1) await this.fillGap(seq);
    if (seq <= this.last) return;
    this.apply(seq, payload);
  }

  private async fillGap(seq: number): Promise<void> {
    const from = this.last + 1;
    const batches = this.o.replayUrl === null ? null : await this.replay(from);
    if (batches === null || (batches[0]?.seq ?? seq) > from) {
      // The missing batches are gone: what we hold for the endpoint may be stale.
      this.resync(`batches ${from}..${seq - 1} lost, not replayable`);
    } else this.replays++;
    for (const b of batches ?? []) if (b.seq > this.last && b.seq < seq) this.apply(b.seq, b.payload);
    this.last = Math.max(this.last, seq - 1);
  }

  private apply(seq: number, payload: Buffer): void {
    this.last = seq;
    let events: KvEvent[];
    try {
      events = decodeEventBatch(payload);
    } catch (err) {
      this.o.onError(err);
      return;
    }
    this.o.onEvents(events);
  }

  private resync(reason: string): void {
    this.resyncs++;
    this.o.onResync(reason);
  }

  /** vLLM's replay protocol: [empty, start seq] to the ROUTER; [empty, seq, payload]… then seq −1. */
  private async replay(from: number): Promise<{ seq: number; payload: Buffer }[] | null> {
    const dealer = new Dealer({ linger: 0, receiveTimeout: this.o.replayTimeoutMs ?? 2_000 });
    try {
      dealer.connect(this.o.replayUrl!);
      const start = Buffer.alloc(8);
      start.writeBigInt64BE(BigInt(from));
      await dealer.send(['', start]);
      const out: { seq: number; payload: Buffer }[] = [];
      for (;;) {
        const [, seqFrame, payload] = await dealer.receive();
        if (seqFrame === undefined || seqFrame.length !== 8 || payload === undefined) return null;
        const seq = Number(seqFrame.readBigInt64BE(0));
        if (seq === -1) return out;
        out.push({ seq, payload });
      }
    } catch {
      return null; // timed out or refused: treated as not replayable
    } finally {
      dealer.close();
    }
  }
}

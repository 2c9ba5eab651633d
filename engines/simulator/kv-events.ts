// KV-cache events as vLLM publishes them (--kv-events-config, vllm/distributed/kv_events.py), so the
// proxy's prefix index is exercised on the real wire format without a GPU: a ZMQ PUB socket sends
// multipart [topic, seq (8-byte big-endian), msgpack EventBatch], and a ROUTER socket answers a
// replay request (the first wanted seq, 8 bytes) with every buffered [seq, payload] from there on,
// then the end marker (seq -1, empty payload). The batch and the events are msgspec structs encoded
// as maps, each event tagged with its class name in `type`; fields with defaults are omitted when at
// their default, as msgspec's omit_defaults does.
import { encode } from '@msgpack/msgpack';
import { Publisher, Router } from 'zeromq';

export type KvEvent =
  | {
      type: 'BlockStored';
      block_hashes: number[];
      parent_block_hash: number | null;
      token_ids: number[];
      block_size: number;
    }
  | { type: 'BlockRemoved'; block_hashes: number[] }
  | { type: 'AllBlocksCleared' };

const END_SEQ = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

export interface KvEventPublisherOptions {
  /** PUB address to bind, e.g. tcp://127.0.0.1:5557 (vLLM's default is tcp://*:5557); port * = any. */
  endpoint: string;
  /** ROUTER address for replay requests; null: no replay (vLLM's default too). */
  replayEndpoint: string | null;
  /** Batches kept for replay (vLLM's buffer_steps, 10 000 by default). */
  bufferSteps: number;
}

export class KvEventPublisher {
  private seq = 0;
  private readonly buffer: { seq: number; payload: Uint8Array }[] = [];
  private sending: Promise<void> = Promise.resolve();
  private closed = false;
  private lose = 0;

  private constructor(
    private readonly pub: Publisher,
    private readonly router: Router | null,
    private readonly bufferSteps: number,
  ) {
    if (router) void this.serveReplays(router);
  }

  static async start(o: KvEventPublisherOptions): Promise<KvEventPublisher> {
    const pub = new Publisher({ sendHighWaterMark: 100_000, linger: 0 });
    await pub.bind(o.endpoint);
    let router: Router | null = null;
    if (o.replayEndpoint !== null) {
      router = new Router({ linger: 0 });
      await router.bind(o.replayEndpoint);
    }
    return new KvEventPublisher(pub, router, o.bufferSteps);
  }

  /** The bound PUB address (the real port when the endpoint asked for any). */
  get url(): string {
    return this.pub.lastEndpoint ?? '';
  }
  get replayUrl(): string | null {
    return this.router?.lastEndpoint ?? null;
  }

  /** Publishes one EventBatch; batches go out in call order (a socket sends one message at a time). */
  publish(topic: string, events: readonly KvEvent[]): void {
    if (this.closed || events.length === 0) return;
    const seq = this.seq++;
    const payload = encode({ ts: Date.now() / 1000, events: events.map(wireEvent), data_parallel_rank: 0 });
    this.buffer.push({ seq, payload });
    if (this.buffer.length > this.bufferSteps) this.buffer.shift();
    if (this.lose > 0) {
      this.lose--;
      return;
    }
    this.sending = this.sending
      .then(() => this.pub.send([topic, seqBytes(seq), payload]))
      .catch(() => {
        // A send fails only once the socket is closing; a subscriber that missed it replays.
      });
  }

  /** The next seq to be published (tests skip one to make a gap). */
  get nextSeq(): number {
    return this.seq;
  }

  /** The next `n` batches are kept for replay but never sent, as a PUB socket past its HWM drops them. */
  loseNext(n = 1): void {
    this.lose += n;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.sending;
    this.pub.close();
    this.router?.close();
  }

  private async serveReplays(router: Router): Promise<void> {
    try {
      for await (const [client, , start] of router) {
        if (client === undefined || start === undefined || start.length !== 8) continue;
        const from = Number(start.readBigInt64BE(0));
        for (const b of this.buffer) {
          if (b.seq >= from) await router.send([client, '', seqBytes(b.seq), b.payload]);
        }
        await router.send([client, '', END_SEQ, '']);
      }
    } catch {
      // The socket was closed.
    }
  }
}

function seqBytes(seq: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(seq));
  return b;
}

/** A BlockStored carries vLLM's no-default fields too (lora_id, medium, lora_name), as msgspec sends them. */
function wireEvent(e: KvEvent): Record<string, unknown> {
  switch (e.type) {
    case 'BlockStored':
      return { ...e, lora_id: null, medium: 'GPU', lora_name: null };
    case 'BlockRemoved':
      return { ...e, medium: 'GPU' };
    case 'AllBlocksCleared':
      return { type: e.type };
  }
}

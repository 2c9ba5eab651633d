// Near an account's limit, money another replica leases but does not use must not turn a call the
// balance covers into a lowered max_tokens or a 429. Before either, the replica asks every other
// replica (pub/sub) to give back the unused part of its lease on the account, waits for their
// answers (bounded), and only then reserves again. One request per account at a time: calls
// arriving meanwhile wait for the same answers.
import { randomBytes } from 'node:crypto';
import { onMessage, publish, type Redis, subscribe } from '../../core/redis/client.ts';
import { channels } from '../../core/redis/keyspace.ts';
import type { CreditLeases } from './leases.ts';

export class LeaseReclaim {
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Per request nonce: answers so far, and how many replicas received it (once PUBLISH said). */
  private readonly waiting = new Map<
    string,
    { answers: number; expected: number | null; done: () => void }
  >();

  constructor(
    private readonly o: {
      /** Commands (PUBLISH). */
      redis: Redis;
      /** The subscriber connection. */
      subscriber: Redis;
      leases: CreditLeases;
      /** How long to wait for the other replicas' answers. */
      timeoutMs: number;
      onError: (err: unknown) => void;
    },
  ) {}

  async start(): Promise<void> {
    onMessage(this.o.subscriber, (channel, message) => {
      if (channel === channels.leaseShrink) this.onShrinkAsked(message);
      else if (channel === channels.leaseShrunk) this.onShrunk(message);
    });
    await subscribe(this.o.subscriber, channels.leaseShrink, channels.leaseShrunk);
  }

  /** Gives back this replica's unused lease money on the account and has the others do the same. */
  reclaim(accountId: string): Promise<void> {
    let p = this.inFlight.get(accountId);
    if (p === undefined) {
      p = this.ask(accountId).finally(() => this.inFlight.delete(accountId));
      this.inFlight.set(accountId, p);
    }
    return p;
  }

  private async ask(accountId: string): Promise<void> {
    await this.o.leases.shrink(accountId);
    const nonce = randomBytes(8).toString('hex');
    let done!: () => void;
    const answered = new Promise<void>((r) => {
      done = r;
    });
    const entry = { answers: 0, expected: null as number | null, done };
    this.waiting.set(nonce, entry);
    try {
      const receivers = await publish(
        this.o.redis,
        channels.leaseShrink,
        `${accountId} ${nonce} ${this.o.leases.leaseId}`,
      );
      // Every replica receives the request, this one included (it ignores its own); answers may
      // already have arrived while PUBLISH was on its way back.
      entry.expected = receivers - 1;
      if (entry.answers >= entry.expected) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        answered,
        new Promise<void>((r) => {
          timer = setTimeout(r, this.o.timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    } catch (err) {
      this.o.onError(err);
    } finally {
      this.waiting.delete(nonce);
    }
  }

  private onShrinkAsked(message: string): void {
    const [accountId, nonce, from] = message.split(' ');
    if (!accountId || !nonce || from === this.o.leases.leaseId) return;
    this.o.leases
      .shrink(accountId)
      .catch((err) => this.o.onError(err))
      .finally(() => {
        publish(this.o.redis, channels.leaseShrunk, nonce).catch((err) => this.o.onError(err));
      });
  }

  private onShrunk(nonce: string): void {
    const entry = this.waiting.get(nonce);
    if (!entry) return;
    entry.answers++;
    if (entry.expected !== null && entry.answers >= entry.expected) entry.done();
  }
}

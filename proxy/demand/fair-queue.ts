// Fair queues when a model's fleet is full (issue 32 item 4; llm-d's flow control is the anchor):
// a model whose catalogue entry sets `queue` admits at most perReplica calls per ready endpoint
// into its engines from this proxy; the rest wait here, one FIFO per account, and a freed slot
// goes to the accounts in turn (round-robin), so one account's burst waits behind itself and
// never ahead of another account's call. The queue is bounded per model in calls and in request
// bytes (a burst cannot take the proxy's memory); when full, a call of an account with few waiting
// takes the place of the newest call of the account with the most, so a flood cannot fill the
// queue against the others. Each call has a wait budget. A call refused by the bound, dropped for
// another account or past its budget is a 429 `model_overloaded` with Retry-After — never `insufficient_quota`, which
// is about money. A queued call counts as `queued` demand, which the scaler grows the fleet by.
import type { CatalogueEntry, QueueLimits } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import type { DemandBoard } from './board.ts';

export const modelOverloaded = (model: string, why: string) =>
  new ApiError(
    'model_overloaded',
    `The model '${model}' is at capacity (${why}). Nothing was charged; retry after the Retry-After interval.`,
    { retryAfterS: 2 },
  );

interface Waiter {
  bytes: number;
  admit: () => void;
  /** Refused to make room for another account's call (the full queue's fair drop). */
  refuse: (err: unknown) => void;
}

/** One model's queue on this proxy: calls in its engines, and the waiting ones per account. */
class ModelQueue {
  running = 0;
  capacity = 0;
  queued = 0;
  bytes = 0;
  readonly byAccount = new Map<string, Waiter[]>();
  /** Accounts with waiting calls, in turn order: the head gets the next free slot. */
  readonly turn: string[] = [];

  /** Hands free slots to the accounts in turn. */
  dispatch(): void {
    while (this.running < this.capacity && this.turn.length > 0) {
      const account = this.turn.shift()!;
      const waiters = this.byAccount.get(account)!;
      const next = waiters.shift()!;
      if (waiters.length > 0) this.turn.push(account);
      else this.byAccount.delete(account);
      this.leave(next);
      this.running++;
      next.admit();
    }
  }

  /**
   * Room for one more call of `account` of `bytes`: while the queue is past a bound, the newest
   * waiting call of the account with the most waiting (if that is another account, with more
   * than this one would have) is refused in its favour. False: no room is fair to make.
   */
  makeRoom(account: string, bytes: number, limits: QueueLimits, model: string): boolean {
    const mine = this.byAccount.get(account)?.length ?? 0;
    while (this.queued + 1 > limits.maxQueued || this.bytes + bytes > limits.maxQueuedBytes) {
      let largest: string | undefined;
      for (const [a, ws] of this.byAccount)
        if (largest === undefined || ws.length > this.byAccount.get(largest)!.length) largest = a;
      if (largest === undefined || largest === account || this.byAccount.get(largest)!.length <= mine + 1)
        return false;
      const waiters = this.byAccount.get(largest)!;
      const dropped = waiters[waiters.length - 1]!;
      this.remove(largest, dropped);
      dropped.refuse(modelOverloaded(model, 'its queue is full; this account has the most calls waiting'));
    }
    return true;
  }

  remove(account: string, w: Waiter): void {
    const waiters = this.byAccount.get(account);
    const i = waiters?.indexOf(w) ?? -1;
    if (waiters === undefined || i === -1) return;
    waiters.splice(i, 1);
    this.leave(w);
    if (waiters.length === 0) {
      this.byAccount.delete(account);
      this.turn.splice(this.turn.indexOf(account), 1);
    }
  }

  private leave(w: Waiter): void {
    this.queued--;
    this.bytes -= w.bytes;
  }
}

interface Abortable {
  onAbort(hook: (reason: unknown) => void): void;
  off(hook: (reason: unknown) => void): void;
}

/** How long a call waited, and how the wait ended: the queue-wait and cold-hold histograms. */
export type WaitObserver = (
  model: string,
  seconds: number,
  outcome: 'admitted' | 'refused' | 'cancelled',
) => void;

/** What the queue reads of the live catalogue (CatalogueSnapshot). */
export interface Fleets {
  get(id: string): CatalogueEntry | undefined;
  onChange(listener: () => void): () => void;
}

export class FairQueue {
  private readonly models = new Map<string, ModelQueue>();
  private readonly unlisten: () => void;

  constructor(
    private readonly board: DemandBoard,
    private readonly waited: WaitObserver = () => {},
    private readonly fleets?: Fleets,
  ) {
    // A model's capacity is its ready endpoints: slots an endpoint added brings go to the calls
    // waiting at once, not when the next call arrives or a running one ends.
    this.unlisten = fleets?.onChange(() => this.refit()) ?? (() => {});
  }

  /** Stops following the catalogue (the app closes). */
  close(): void {
    this.unlisten();
  }

  /**
   * The entry a call let in should be sent with: the catalogue's now (the endpoints may have
   * changed while it waited; a slot may have come with a new one), else the one it waited with.
   */
  current(entry: CatalogueEntry): CatalogueEntry {
    const now = this.fleets?.get(entry.id);
    return now !== undefined && now.endpoints.length > 0 ? now : entry;
  }

  private refit(): void {
    for (const [model, q] of this.models) {
      const entry = this.fleets?.get(model);
      if (entry?.queue === undefined || q.queued === 0) continue;
      q.capacity = entry.endpoints.length * entry.queue.perReplica;
      q.dispatch();
    }
  }

  /**
   * A slot in the model's engines for one call: at once when one is free and nobody waits, else
   * when the call's turn comes. The returned release frees the slot (idempotent).
   */
  async admit(
    o: { model: string; endpoints: number; limits: QueueLimits; account: string; bytes: number },
    cancel: Abortable,
  ): Promise<() => void> {
    const q = this.models.get(o.model) ?? new ModelQueue();
    this.models.set(o.model, q);
    q.capacity = o.endpoints * o.limits.perReplica;
    q.dispatch();
    if (q.running < q.capacity && q.turn.length === 0) {
      q.running++;
      return this.releaser(o.model, q);
    }
    if (!q.makeRoom(o.account, o.bytes, o.limits, o.model))
      throw modelOverloaded(o.model, 'its queue is full');
    const leave = this.board.enter(o.model, 'queued');
    const started = performance.now();
    let outcome: 'admitted' | 'refused' | 'cancelled' = 'cancelled';
    let timer: NodeJS.Timeout | undefined;
    let onCancel: ((reason: unknown) => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        const w: Waiter = { bytes: o.bytes, admit: resolve, refuse: reject };
        q.queued++;
        q.bytes += o.bytes;
        const waiters = q.byAccount.get(o.account);
        if (waiters) waiters.push(w);
        else {
          q.byAccount.set(o.account, [w]);
          q.turn.push(o.account);
        }
        const give = (err: unknown) => {
          q.remove(o.account, w);
          reject(err);
        };
        timer = setTimeout(() => {
          outcome = 'refused';
          give(modelOverloaded(o.model, `no slot within ${Math.round(o.limits.maxWaitMs / 1000)} s`));
        }, o.limits.maxWaitMs);
        onCancel = give;
        cancel.onAbort(onCancel);
      });
      outcome = 'admitted';
    } finally {
      this.waited(o.model, (performance.now() - started) / 1000, outcome);
      leave();
      clearTimeout(timer);
      if (onCancel !== undefined) cancel.off(onCancel);
    }
    return this.releaser(o.model, q);
  }

  private releaser(model: string, q: ModelQueue): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      q.running--;
      q.dispatch();
      if (q.running === 0 && q.queued === 0) this.models.delete(model);
    };
  }
}

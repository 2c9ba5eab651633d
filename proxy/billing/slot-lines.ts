// The proxy's line for a key's calls-at-once slots (issue 48 item 3), for an account that opts in
// (its `concurrencyQueueSeconds`, docs/limits.md): a call the limit refuses waits here, up to that
// long, instead of being answered 429, and tries the reserve again when its turn may pass. The
// slots themselves are in Redis (core/billing/lua/windows.lua), shared by every replica, so this
// line only orders this replica's waiters of one key: first come, first tried, and a new call of a
// key with waiters here joins behind them instead of taking the slot they wait for.
//
// Who tries when: the head of a line tries when a call of its key ends on this replica with its
// slot back in Redis (`freed`, called once the settle or release is acknowledged), or when the
// slot is expected back (the refusal's retry, estimated in Lua from the key's running calls: a
// slot freed on another replica is seen by that clock). The others wait to be head; each becomes
// head when the one before leaves (served, out of time or gone) and tries at once.

/** What a wait needs of the call's Cancel (../engine/cancel.ts). */
interface Abortable {
  onAbort(hook: (reason: unknown) => void): void;
  off(hook: (reason: unknown) => void): void;
}

/** One call's place in its key's line. */
export class Turn {
  private wake: (() => void) | null = null;

  constructor(
    private readonly line: Turn[],
    private readonly onEmpty: () => void,
  ) {}

  private get head(): boolean {
    return this.line[0] === this;
  }

  /**
   * Resolves when this call should try the reserve: the head when its key's slot is freed here or
   * after `retryMs`; any other once it becomes head; every one at `deadline` (performance.now()
   * time) at the latest. Rejects with the cancel's reason when the caller goes.
   */
  next(retryMs: number, deadline: number, cancel: Abortable): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const left = Math.max(0, deadline - performance.now());
      const wait = this.head ? Math.min(retryMs, left) : left;
      const end = (): void => {
        clearTimeout(timer);
        cancel.off(gone);
        this.wake = null;
      };
      const gone = (reason: unknown): void => {
        end();
        reject(reason);
      };
      const timer = setTimeout(() => {
        end();
        resolve();
      }, wait);
      this.wake = () => {
        end();
        resolve();
      };
      cancel.onAbort(gone);
    });
  }

  /** Leaves the line (idempotent); the next in it becomes head and tries at once. */
  leave(): void {
    const i = this.line.indexOf(this);
    if (i === -1) return;
    this.line.splice(i, 1);
    if (i === 0) this.line[0]?.wake?.();
    if (this.line.length === 0) this.onEmpty();
  }

  /** Its key's slot is freed here: the head tries now. */
  freed(): void {
    if (this.head) this.wake?.();
  }
}

export class SlotLines {
  private readonly lines = new Map<string, Turn[]>();

  /** Whether calls of the key wait on this replica (a new call of it joins behind them). */
  busy(keyId: string): boolean {
    return this.lines.has(keyId);
  }

  /** A place at the back of the key's line. */
  join(keyId: string): Turn {
    let line = this.lines.get(keyId);
    if (line === undefined) {
      line = [];
      this.lines.set(keyId, line);
    }
    const l = line;
    const turn = new Turn(l, () => {
      if (this.lines.get(keyId) === l) this.lines.delete(keyId);
    });
    l.push(turn);
    return turn;
  }

  /** A call of the key ended here and its slot is back in Redis: the head of its line tries at once. */
  freed(keyId: string): void {
    this.lines.get(keyId)?.[0]?.freed();
  }
}

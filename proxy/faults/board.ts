// The fault table (./faults.ts) read against the live sources: which faults hold now, and from that
// alone the replica's readiness checks, the refusal a call gets, and /readyz's reasons. Pure reads,
// no state of its own: every answer is the table and the sources at that moment, so a fault that
// ends is gone from all three at once.
import type { ApiError } from '../../core/errors.ts';
import type { Fault, FaultSources } from './faults.ts';

export class FaultBoard {
  constructor(
    readonly table: readonly Fault[],
    readonly sources: FaultSources,
  ) {}

  /** The faults that hold now, for the whole replica or for one shard, in table order. */
  holding(): Fault[] {
    return this.table.filter((f) => f.holds(this.sources) || f.shard?.anywhere(this.sources));
  }

  /**
   * /readyz's checks the faults decide: each check the table names, false while a fault of it
   * holds (keys in the order the table first names them).
   */
  readiness(): Record<string, boolean> {
    const checks: Record<string, boolean> = {};
    for (const f of this.table) checks[f.check] = (checks[f.check] ?? true) && !f.holds(this.sources);
    return checks;
  }

  /** What is wrong, in words, for /readyz and the operator (empty: nothing). */
  reasons(): string[] {
    return this.holding().map((f) => f.message(this.sources));
  }

  /**
   * Why a new billable call (of `accountId`) is refused now — the first refusing fault that holds
   * for the replica, or for that account's shard — or null.
   */
  refusal(accountId?: string): ApiError | null {
    const s = this.sources;
    const holds = (f: Fault) =>
      f.holds(s) || (accountId !== undefined && f.shard?.holdsFor(s, accountId) === true);
    return this.table.find((f) => f.refuses !== 'nothing' && holds(f))?.refusal() ?? null;
  }

  /** Why any /v1 call is refused now, or null: read on every request, so only the faults that say so. */
  callRefusal(): ApiError | null {
    for (const f of this.table) if (f.refuses === 'every call' && f.holds(this.sources)) return f.refusal();
    return null;
  }
}

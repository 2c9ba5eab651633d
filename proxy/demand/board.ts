// This replica's demand per model (core/demand/demand.ts): every request in an engine, waiting in a fair
// queue or held for a cold model enters the board and leaves it exactly once. The counts are what
// the publisher writes to Redis for the operator's scaler and what /metrics shows per model.
import { type Demand, noDemand } from '../../core/demand/demand.ts';

export type DemandState = keyof Demand;

export class DemandBoard {
  private readonly models = new Map<string, Demand>();
  private readonly firstHeld = new Set<() => void>();

  /** Counts one request of `model` in `state`; the returned leave is idempotent. */
  enter(model: string, state: DemandState): () => void {
    let d = this.models.get(model);
    if (d === undefined) {
      d = noDemand();
      this.models.set(model, d);
    }
    d[state]++;
    // A cold model's first held request should reach the scaler now, not at the next interval.
    if (state === 'held' && d.held === 1) for (const l of this.firstHeld) l();
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const now = this.models.get(model);
      if (now === undefined) return;
      now[state]--;
      if (now.inFlight + now.queued + now.held === 0) this.models.delete(model);
    };
  }

  get(model: string): Demand {
    return { ...(this.models.get(model) ?? noDemand()) };
  }

  /** A copy of every model's counts (models with none are absent). */
  snapshot(): Map<string, Demand> {
    return new Map([...this.models].map(([m, d]) => [m, { ...d }]));
  }

  /** Called when a model goes from no held request to one. */
  onFirstHeld(listener: () => void): () => void {
    this.firstHeld.add(listener);
    return () => this.firstHeld.delete(listener);
  }
}

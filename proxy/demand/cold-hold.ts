// Holding a call for a model with no ready endpoint (issue 32 "Scale to zero and back"): a model
// the operator scales (its catalogue entry has coldStartTimeoutMs) keeps its entry while no engine
// runs; a call for it waits here, counted as `held` demand (which is what wakes the model), and
// goes to the first endpoint the catalogue shows. Past the model's coldStartTimeout the call is a
// 503 with Retry-After; it never reached an engine, so the metered lifecycle charges nothing. A
// model without the field is not held: no endpoint is the old retryable 500 (a restart, not a
// sleep). Waiting is on the snapshot's change events, one listener per held call: no polling.
import type { CatalogueEntry, CatalogueSnapshot } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import type { DemandBoard } from './board.ts';
import type { WaitObserver } from './fair-queue.ts';

/** What a held call needs of the call's Cancel (../engine/cancel.ts, which imports this folder). */
interface Abortable {
  onAbort(hook: (reason: unknown) => void): void;
  off(hook: (reason: unknown) => void): void;
}

export const coldStartTimeout = (model: string, waitedMs: number) =>
  new ApiError(
    'model_cold_start_timeout',
    `The model '${model}' is starting up and had no engine ready within ${Math.round(waitedMs / 1000)} s. Nothing was charged; retry shortly.`,
    { retryAfterS: 10 },
  );

export class ColdHold {
  constructor(
    private readonly catalogue: CatalogueSnapshot,
    private readonly board: DemandBoard,
    /** How long a held call waited and how it ended (admitted: an engine came up). */
    private readonly waited: WaitObserver = () => {},
  ) {}

  /** Whether a call for this entry, as it is, would be held. */
  holds(entry: CatalogueEntry): boolean {
    return entry.endpoints.length === 0 && entry.coldStartTimeoutMs !== undefined;
  }

  /**
   * The entry as soon as it has a ready endpoint (at once if it has one). `onHeld` runs when the
   * call starts waiting (a streamed call starts its keep-alives). Rejects with the cancel's reason
   * if the call is cancelled, with a 503 at the timeout.
   */
  async ready(entry: CatalogueEntry, cancel: Abortable, onHeld?: () => void): Promise<CatalogueEntry> {
    if (!this.holds(entry)) return entry;
    const timeoutMs = entry.coldStartTimeoutMs!;
    const leave = this.board.enter(entry.id, 'held');
    onHeld?.();
    const started = performance.now();
    let outcome: 'admitted' | 'refused' | 'cancelled' = 'cancelled';
    let unlisten = () => {};
    let timer: NodeJS.Timeout | undefined;
    let onCancel: ((reason: unknown) => void) | undefined;
    try {
      const ready = await new Promise<CatalogueEntry>((resolve, reject) => {
        const check = () => {
          const now = this.catalogue.get(entry.id);
          if (now !== undefined && now.endpoints.length > 0) resolve(now);
        };
        unlisten = this.catalogue.onChange(check);
        onCancel = (reason) => reject(reason);
        cancel.onAbort(onCancel);
        timer = setTimeout(() => {
          outcome = 'refused';
          reject(coldStartTimeout(entry.id, performance.now() - started));
        }, timeoutMs);
        check();
      });
      outcome = 'admitted';
      return ready;
    } finally {
      this.waited(entry.id, (performance.now() - started) / 1000, outcome);
      leave();
      unlisten();
      clearTimeout(timer);
      if (onCancel !== undefined) cancel.off(onCancel);
    }
  }
}

// Fenced writes of `replicas`: what keeps a deposed operator leader from scaling. The catalogue is
// fenced in Redis (core/catalogue/fence.ts); `replicas` lives in the Model, so its fence lives
// there too, and the API server checks it. Each Model carries the newest leadership term that
// claimed its replicas (an annotation). A term claims a Model before it first scales it, and the
// scaler claims every autoscaled Model at the start of a term, so an older term is refused from
// then on — as the catalogue's fence is raised before the first reconcile.
//
// Why the API server refuses a stale term: every claim and every scale is written with the
// resourceVersion of the Model it read (optimistic concurrency), after checking that Model's term
// is not newer than ours. A deposed leader that read the Model before the new term's claim writes
// with an older resourceVersion and gets 409; one that read it after sees the newer term and does
// not write. Either way no stale term's replicas land, whatever the stale leader believes.
// A 409 from our own status writes (which also move the resourceVersion) is retried on a fresh read.
import { describeWriter, secondReplicasWriter } from '../autoscale/writers.ts';
import type { Model } from '../model/model.ts';
import { isAlreadyExists, type KubeClient } from './client.ts';

export const SCALE_TERM_ANNOTATION = 'modelplane.dev/scale-term';

/** The newest term that claimed this Model's replicas (0 when none has). */
export function scaleTermOf(model: Model): number {
  const raw = model.metadata.annotations?.[SCALE_TERM_ANNOTATION];
  const n = raw === undefined ? 0 : Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

export type ScaleFenceVerdict =
  /** The Model is claimed by our term: write replicas. */
  | { kind: 'write' }
  /** An older term (or none) claimed it: claim it first. */
  | { kind: 'claim' }
  /** A newer term claimed it: we were deposed. */
  | { kind: 'stale'; fence: number };

/** Pure: what a writer holding `term` may do with the Model as it read it. */
export function scaleFence(model: Model, term: number): ScaleFenceVerdict {
  const fence = scaleTermOf(model);
  if (fence > term) return { kind: 'stale', fence };
  return fence === term ? { kind: 'write' } : { kind: 'claim' };
}

/** A newer leadership term claimed the Model's replicas: this writer was deposed. */
export class StaleScaleTermError extends Error {
  constructor(
    readonly term: number,
    readonly fence: number,
  ) {
    super(`replicas write refused: term ${term} is older than the Model's scale fence ${fence}`);
    this.name = 'StaleScaleTermError';
  }
}

export const isStaleScaleTerm = (err: unknown): err is StaleScaleTermError =>
  err instanceof StaleScaleTermError;

/** Someone else writes this Model's replicas: one writer, so the scaler does not. */
export class SecondReplicasWriterError extends Error {
  constructor(readonly writer: string) {
    super(`replicas write withheld: they are written by ${writer} too`);
    this.name = 'SecondReplicasWriterError';
  }
}

/** Asked to scale while holding no term (not the leader). */
export class NotLeadingScaleError extends Error {
  constructor() {
    super('not the leader: replicas writes are fenced off');
    this.name = 'NotLeadingScaleError';
  }
}

const ATTEMPTS = 3;

export class ScaleWriter {
  private term: number | null = null;

  constructor(private readonly kube: KubeClient) {}

  lead(term: number): void {
    this.term = term;
  }

  follow(): void {
    this.term = null;
  }

  get currentTerm(): number | null {
    return this.term;
  }

  /** Raises the Model's fence to our term (nothing when it is there already). */
  async claim(model: Model): Promise<void> {
    await this.fenced(model, async () => undefined);
  }

  /**
   * Writes replicas under our term; throws when deposed (locally or by the Model's fence), and when
   * the Model read again after a 409 shows another writer took its replicas (autoscale/writers.ts).
   */
  async scale(model: Model, replicas: number): Promise<void> {
    await this.fenced(model, async (current) => {
      const other = secondReplicasWriter(current);
      if (other) throw new SecondReplicasWriterError(describeWriter(other));
      await this.kube.scaleModel(current, replicas);
    });
  }

  /**
   * Claims the Model if needed, then writes, each guarded by the resourceVersion it read. A 409
   * (someone wrote the Model since: our status, a new term's claim) re-reads and decides again.
   */
  private async fenced(model: Model, write: (current: Model) => Promise<void>): Promise<void> {
    let current = model;
    for (let attempt = 1; ; attempt++) {
      const term = this.term;
      if (term === null) throw new NotLeadingScaleError();
      try {
        const verdict = scaleFence(current, term);
        if (verdict.kind === 'stale') throw new StaleScaleTermError(term, verdict.fence);
        if (verdict.kind === 'claim')
          current = await this.kube.annotateModel(current, {
            [SCALE_TERM_ANNOTATION]: String(term),
          });
        await write(current);
        return;
      } catch (err) {
        if (!isAlreadyExists(err) || attempt >= ATTEMPTS) throw err;
        current = await this.kube.readModel(current);
      }
    }
  }
}

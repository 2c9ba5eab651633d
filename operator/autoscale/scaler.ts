// The scaler, the acting half (./decide.ts thinks): on the leader only, every interval, it reads
// the demand every proxy published (core/demand/demand.ts) and the engines' own load, decides each
// autoscaled Model's replicas, writes `replicas` where it changes (the runtime's setReplicas: the
// scale subresource on Kubernetes, the process count locally) and hands the decision to the
// runtime, whose reconcile puts it in the Model's status. One writer of `replicas`: a follower
// decides nothing, and a Model whose autoscaling.writer is `external` (KEDA, an HPA) is skipped.
// So is a Model someone else scales although its writer is the operator (./writers.ts: an HPA left
// on it): writing would fight it, so the scaler stops, and the runtime says so once (an event).
// What it remembers (the window's samples) is per leadership term; the times it must not forget
// (the last scale-up, the last demand) are read back from the status when a new leader starts.
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { type Demand, type DemandStore, noDemand, totalDemand } from '../../core/demand/demand.ts';
import type { AutoscalingStatus, Model } from '../model/model.ts';
import type { ConditionInput } from '../model/status.ts';
import {
  CHANGE_REASONS,
  decideReplicas,
  type EngineLoad,
  freshMemory,
  type ScaleDecision,
  type ScaleMemory,
  type ScaleReason,
} from './decide.ts';
import { scrapeEngineLoad } from './engine-load.ts';
import { autoscalePolicy } from './policy.ts';
import { decisionStatus } from './status.ts';
import { type ReplicasWriter, secondReplicasWriter } from './writers.ts';

/** An autoscaled Model as the runtime sees it now. */
export interface ScaleTarget {
  key: string;
  model: Model;
  /** spec.engine.replicas as last written (by us, `kubectl scale` or the file). */
  current: number;
  /** Ready endpoints' URLs (their /metrics carry the engines' load). */
  endpoints: string[];
}

export interface ScalerDeps {
  demand: DemandStore;
  log: Logger;
  isLeader(): boolean;
  targets(): ScaleTarget[];
  setReplicas(target: ScaleTarget, replicas: number): Promise<void>;
  /**
   * Fences the Model's replicas for this leader's term before anything else (Kubernetes:
   * kube/scale-fence.ts), so a deposed leader cannot scale a Model this term never had to.
   */
  claim?(target: ScaleTarget): Promise<void>;
  /** The decision for the Model's status (the runtime re-plans the Model with it). */
  decided(key: string, result: { status: AutoscalingStatus; condition: ConditionInput }): void;
  /** Someone else writes the Model's replicas: the scaler stopped writing them (once per episode). */
  secondWriter?(target: ScaleTarget, writer: ReplicasWriter): void;
  engineLoad?: (endpoints: string[]) => Promise<EngineLoad | null>;
  registry?: Registry;
  now?: () => number;
}

const ms = (s: string | undefined) => (s === undefined ? null : Date.parse(s) || null);

export class Scaler {
  private readonly memory = new Map<string, ScaleMemory>();
  /** Models whose replicas another writer holds, already reported. */
  private readonly yielded = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | null = null;
  private readonly desiredGauge: Gauge<'model'> | undefined;
  private readonly demandGauge: Gauge<'model' | 'state'> | undefined;
  private readonly events: Counter<'model' | 'direction'> | undefined;

  constructor(private readonly deps: ScalerDeps) {
    const registers = deps.registry ? [deps.registry] : [];
    if (registers.length > 0) {
      this.desiredGauge = new Gauge({
        name: 'modelplane_operator_desired_replicas',
        help: "Replicas the scaler decided for each autoscaled model (the leader's decision).",
        labelNames: ['model'],
        registers,
      });
      this.demandGauge = new Gauge({
        name: 'modelplane_operator_model_demand',
        help: 'Demand per model summed over the proxies: in_flight, queued, held (for a cold start).',
        labelNames: ['model', 'state'],
        registers,
      });
      this.events = new Counter({
        name: 'modelplane_operator_scale_events_total',
        help: 'Replicas written by the scaler, by direction (up, down).',
        labelNames: ['model', 'direction'],
        registers,
      });
    }
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.tick(), intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
  }

  /** One round over every autoscaled Model; overlapping calls share the running round. */
  tick(): Promise<void> {
    this.ticking ??= this.round()
      .catch((err: unknown) => this.deps.log.warn({ err }, 'scaler round failed'))
      .finally(() => {
        this.ticking = null;
      });
    return this.ticking;
  }

  private async round(): Promise<void> {
    if (!this.deps.isLeader()) {
      // A later term starts over from the status, never from a stale window.
      this.memory.clear();
      return;
    }
    const { byModel } = await this.deps.demand.read();
    const seen = new Set<string>();
    await Promise.all(
      this.deps.targets().map(async (t) => {
        const policy = autoscalePolicy(t.model.spec.engine);
        if (policy === null || t.model.metadata.deletionTimestamp) return;
        const other = secondReplicasWriter(t.model);
        if (other) {
          // Not seen: its window is dropped, so taking over again starts a fresh one.
          if (!this.yielded.has(t.key)) this.deps.secondWriter?.(t, other);
          this.yielded.add(t.key);
          return;
        }
        this.yielded.delete(t.key);
        seen.add(t.key);
        await this.deps
          .claim?.(t)
          .catch((err: unknown) => this.deps.log.warn({ err, model: t.key }, 'scale claim failed'));
        const demand = byModel.get(t.model.spec.id) ?? noDemand();
        const engine =
          t.endpoints.length > 0 ? await (this.deps.engineLoad ?? scrapeEngineLoad)(t.endpoints) : null;
        const now = (this.deps.now ?? Date.now)();
        const memory = this.memory.get(t.key) ?? this.recalled(t.model, now);
        const d = decideReplicas(policy, { now, current: t.current, demand, engine }, memory);
        this.memory.set(t.key, d.memory);
        this.observe(t, demand, d);
        if (d.desired !== t.current) {
          if (!this.deps.isLeader()) return;
          await this.deps.setReplicas(t, d.desired);
          this.events?.inc({ model: t.model.spec.id, direction: d.desired > t.current ? 'up' : 'down' });
          this.deps.log.info(
            { model: t.key, from: t.current, to: d.desired, reason: d.reason },
            `scaled: ${d.message}`,
          );
        }
        this.deps.decided(t.key, decisionStatus(t.model, t.current, demand, d, now));
      }),
    );
    for (const key of this.memory.keys()) if (!seen.has(key)) this.memory.delete(key);
  }

  /** A new leader's memory: an empty window, and the times the status kept. */
  private recalled(model: Model, now: number): ScaleMemory {
    const s = model.status?.autoscaling;
    const reason = s?.reason as ScaleReason | undefined;
    const message = model.status?.conditions?.find((c) => c.type === 'Scaling')?.message;
    return freshMemory(now, {
      lastScaleUpAt: ms(s?.lastScaleUpTime),
      lastDemandAt: ms(s?.lastDemandTime),
      lastChange: reason && CHANGE_REASONS.has(reason) && message ? { reason, message } : null,
    });
  }

  private observe(t: ScaleTarget, demand: Demand, d: ScaleDecision): void {
    const model = t.model.spec.id;
    this.desiredGauge?.set({ model }, d.desired);
    this.demandGauge?.set({ model, state: 'in_flight' }, demand.inFlight);
    this.demandGauge?.set({ model, state: 'queued' }, demand.queued);
    this.demandGauge?.set({ model, state: 'held' }, demand.held);
  }
}

/**
 * A runtime's scaler, when the proxies' demand is at hand (else none: replicas stay as written).
 * The runtime brings what differs: who leads, its Models, how replicas are written.
 */
export function runtimeScaler(
  deps: { demand?: DemandStore | undefined; log: Logger; metrics?: { registry: Registry } | undefined },
  runtime: Pick<ScalerDeps, 'isLeader' | 'targets' | 'setReplicas' | 'decided' | 'claim' | 'secondWriter'>,
): Scaler | undefined {
  if (deps.demand === undefined) return undefined;
  return new Scaler({
    demand: deps.demand,
    log: deps.log,
    ...(deps.metrics ? { registry: deps.metrics.registry } : {}),
    ...runtime,
  });
}

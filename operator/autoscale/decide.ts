// The scaler's decision, pure (after KubeAI's autoscaler and the HPA's behaviour): from one
// Model's autoscaling policy, the demand the proxies published, the engines' own load where they
// export it, and what the scaler remembers, the replicas the Model should have now and why. No
// I/O: ./scaler.ts gathers the inputs and writes `replicas`; tests run this with a clock of numbers.
//
// - desired = ceil(demand / targetInFlight), demand = in flight + queued + held for a cold start,
//   clamped to minReplicas..maxReplicas;
// - the engines' signals raise it by one where every replica is saturated (llm-d's thresholds:
//   vllm:num_requests_waiting ≥ 5 per replica, or vllm:kv_cache_usage_perc ≥ 0.8): demand the
//   proxies cannot see, queued inside the engines;
// - a held request wakes a model at zero at once (desired ≥ 1), however many proxies hold one;
// - up at once; down only to the highest recommendation of the last `window` (a burst that comes
//   and goes does not flap), never sooner than `scaleDownDelay` after a scale-up, and only once a
//   whole window has been watched (a new leader does not scale down on its first sample);
// - to zero only after `idle` with no demand at all (minReplicas 0).
import { type Demand, totalDemand } from '../../core/demand/demand.ts';

export interface AutoscalePolicy {
  min: number;
  max: number;
  targetInFlight: number;
  scaleDownDelayMs: number;
  windowMs: number;
  idleMs: number;
}

/** The engines' own load, summed over the ready replicas that export it (null: none does). */
export interface EngineLoad {
  replicas: number;
  waiting: number;
  running: number;
  /** The lowest KV-cache usage among them, 0..1: every replica is at least this full (null: not exported). */
  kvCacheUsage: number | null;
}

export interface ScaleMemory {
  /** When this memory began (a leader's first look): a scale-down waits for a whole window. */
  since: number;
  samples: { at: number; want: number }[];
  lastScaleUpAt: number | null;
  lastDemandAt: number | null;
  /**
   * The last decision that changed replicas, shown until the next one: a wake read `Steady` two
   * seconds later otherwise, before anyone looked (issue 47.9). Null: none yet.
   */
  lastChange: { reason: ScaleReason; message: string } | null;
}

export interface ScaleInputs {
  now: number;
  /** The replicas asked for now (spec.engine.replicas). */
  current: number;
  demand: Demand;
  engine: EngineLoad | null;
}

export type ScaleReason =
  | 'ScaledUp'
  | 'WokenByHeldRequest'
  | 'ScaledDown'
  | 'ScaledToZero'
  | 'HoldingScaleDown'
  | 'Steady';

export interface ScaleDecision {
  desired: number;
  /** This sample's recommendation, before the down-scaling rules. */
  want: number;
  saturated: boolean;
  reason: ScaleReason;
  message: string;
  memory: ScaleMemory;
}

export const SATURATED_WAITING_PER_REPLICA = 5;
export const SATURATED_KV_CACHE = 0.8;

export const freshMemory = (now: number, from: Partial<ScaleMemory> = {}): ScaleMemory => ({
  since: now,
  samples: [],
  lastScaleUpAt: from.lastScaleUpAt ?? null,
  lastDemandAt: from.lastDemandAt ?? null,
  lastChange: from.lastChange ?? null,
});

/** The reasons of decisions that change replicas (the others hold them as they are). */
export const CHANGE_REASONS: ReadonlySet<ScaleReason> = new Set([
  'ScaledUp',
  'WokenByHeldRequest',
  'ScaledDown',
  'ScaledToZero',
]);

const clamp = (n: number, p: AutoscalePolicy) => Math.min(Math.max(n, p.min), p.max);

export function isSaturated(load: EngineLoad | null): boolean {
  if (load === null || load.replicas === 0) return false;
  return (
    load.waiting / load.replicas >= SATURATED_WAITING_PER_REPLICA ||
    (load.kvCacheUsage ?? 0) >= SATURATED_KV_CACHE
  );
}

export function decideReplicas(p: AutoscalePolicy, s: ScaleInputs, memory: ScaleMemory): ScaleDecision {
  const total = totalDemand(s.demand);
  const lastDemandAt = total > 0 ? s.now : memory.lastDemandAt;
  const byDemand = Math.ceil(total / p.targetInFlight);
  const saturated = isSaturated(s.engine);
  let want = saturated && byDemand <= s.current ? s.current + 1 : byDemand;
  if (s.demand.held > 0) want = Math.max(want, 1);
  const idleFor = s.now - (lastDemandAt ?? memory.since);
  // Below one replica only after a whole idle period: a model between two calls stays warm. One
  // already asleep stays asleep (a new leader does not wake every sleeping model).
  if (want === 0 && s.current > 0 && idleFor < p.idleMs) want = 1;
  want = clamp(want, p);

  const samples = [...memory.samples.filter((x) => s.now - x.at < p.windowMs), { at: s.now, want }];
  const next: ScaleMemory = {
    since: memory.since,
    samples,
    lastScaleUpAt: memory.lastScaleUpAt,
    lastDemandAt,
    lastChange: memory.lastChange,
  };
  const inputs = `demand ${total} (in flight ${s.demand.inFlight}, queued ${s.demand.queued}, held ${s.demand.held}), target ${p.targetInFlight} per replica${saturated ? ', engines saturated' : ''}`;
  const decided = (desired: number, reason: ScaleReason, why: string): ScaleDecision => {
    const message = `${why}: ${inputs}`;
    if (CHANGE_REASONS.has(reason)) next.lastChange = { reason, message };
    return { desired, want, saturated, reason, message, memory: next };
  };

  const current = clamp(s.current, p);
  if (want > current) {
    next.lastScaleUpAt = s.now;
    const woken = current === 0;
    return decided(
      want,
      woken ? 'WokenByHeldRequest' : 'ScaledUp',
      `${woken ? 'woken' : 'scaled up'} from ${s.current} to ${want}`,
    );
  }
  if (want === current) return decided(current, 'Steady', `${current} replica(s) fit`);

  const sinceUp = next.lastScaleUpAt === null ? Number.POSITIVE_INFINITY : s.now - next.lastScaleUpAt;
  if (sinceUp < p.scaleDownDelayMs)
    return decided(
      current,
      'HoldingScaleDown',
      `${want} would do, but the last scale-up was ${Math.round(sinceUp / 1000)} s ago`,
    );
  if (s.now - memory.since < p.windowMs)
    return decided(
      current,
      'HoldingScaleDown',
      `${want} would do; watching a whole window before scaling down`,
    );
  const stable = Math.max(...samples.map((x) => x.want));
  if (stable >= current)
    return decided(current, 'HoldingScaleDown', `${want} would do now, ${stable} within the window`);
  return decided(
    stable,
    stable === 0 ? 'ScaledToZero' : 'ScaledDown',
    stable === 0
      ? `idle for ${Math.round(idleFor / 1000)} s: scaled to zero`
      : `scaled down from ${s.current} to ${stable}`,
  );
}

// The one interface both runtimes implement: `kubernetes` (Model CRs → Deployments, Services,
// EndpointSlices) and `local` (Model YAML files → child processes). Either way the outcome is the
// same catalogue entries in Redis, which is all the proxies see.
import type { Logger } from 'pino';
import type { DemandStore } from '../../core/demand/demand.ts';
import type { HealthSource, ModelConditionSource, OperatorMetrics } from '../metrics.ts';
import type { CatalogueWriter } from './catalogue-writer.ts';

export interface Runtime extends HealthSource, ModelConditionSource {
  readonly kind: 'kubernetes' | 'local';
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Resolves once queued work has settled (tests and `make dev` start-up). */
  idle(): Promise<void>;
}

export interface RuntimeDeps {
  catalogue: CatalogueWriter;
  log: Logger;
  /** Set after construction: metrics read conditions from the runtime itself. */
  metrics?: OperatorMetrics;
  /** The proxies' published demand: with it, the leader scales autoscaled Models (operator/autoscale/). */
  demand?: DemandStore;
  /** How often the scaler decides (default 2 s). */
  scaleIntervalMs?: number;
}

// The proxy's side of autoscaling (issue 32), built once by app.ts: the demand board every engine
// call and held call counts on, its publisher to Redis for the operator, its per-model gauge, and
// the hold for models scaled to zero.
import { Gauge, type Registry } from 'prom-client';
import type { CatalogueSnapshot } from '../../core/catalogue/index.ts';
import { DemandStore } from '../../core/demand.ts';
import type { Redis } from '../../core/redis-client.ts';
import { DemandBoard } from './board.ts';
import { ColdHold } from './cold-hold.ts';
import { FairQueue } from './fair-queue.ts';
import { DemandPublisher } from './publisher.ts';

export { DemandBoard } from './board.ts';
export { ColdHold } from './cold-hold.ts';

export interface ProxyDemand {
  board: DemandBoard;
  hold: ColdHold;
  queue: FairQueue;
  publisher: DemandPublisher;
}

export function startDemand(o: {
  redis: Redis;
  catalogue: CatalogueSnapshot;
  registry: Registry;
  intervalMs: number;
  onError: (err: unknown) => void;
}): ProxyDemand {
  const board = new DemandBoard();
  new Gauge({
    name: 'mp_proxy_model_demand',
    help: "This replica's requests per model: in an engine (in_flight), in the fair queue (queued), held for a cold start (held)",
    labelNames: ['model', 'state'] as const,
    registers: [o.registry],
    collect() {
      this.reset();
      for (const [model, d] of board.snapshot()) {
        this.set({ model, state: 'in_flight' }, d.inFlight);
        this.set({ model, state: 'queued' }, d.queued);
        this.set({ model, state: 'held' }, d.held);
      }
    },
  });
  const publisher = new DemandPublisher(new DemandStore(o.redis), board, {
    intervalMs: o.intervalMs,
    onError: o.onError,
  });
  publisher.start();
  return { board, hold: new ColdHold(o.catalogue, board), queue: new FairQueue(board), publisher };
}

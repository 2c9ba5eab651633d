// The proxy's side of autoscaling (issue 32), built once by app.ts: the demand board every engine
// call and held call counts on, its publisher to Redis for the operator, its per-model gauge, and
// the hold for models scaled to zero.
import { Gauge, Histogram, type Registry } from 'prom-client';
import type { CatalogueSnapshot } from '../../core/catalogue/index.ts';
import { DemandStore } from '../../core/demand/demand.ts';
import type { Redis } from '../../core/redis/client.ts';
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
  // How long calls waited for a slot (the fair queue) and for a cold model's first engine, per
  // model and by how the wait ended: the dashboard's queue and cold-start panels.
  const histogram = (name: string, help: string, buckets: number[]) => {
    const h = new Histogram({
      name,
      help,
      labelNames: ['model', 'outcome'] as const,
      buckets,
      registers: [o.registry],
    });
    return (model: string, seconds: number, outcome: string) => h.observe({ model, outcome }, seconds);
  };
  const queueWait = histogram(
    'mp_proxy_queue_wait_seconds',
    "Time calls waited in a full model's fair queue, by outcome (admitted, refused at the wait budget, cancelled)",
    [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  );
  const coldWait = histogram(
    'mp_proxy_cold_start_hold_seconds',
    "Time calls were held for a cold model's first engine, by outcome (admitted, refused at coldStartTimeout, cancelled)",
    [0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600],
  );
  return {
    board,
    hold: new ColdHold(o.catalogue, board, coldWait),
    queue: new FairQueue(board, queueWait, o.catalogue),
    publisher,
  };
}

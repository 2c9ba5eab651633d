// The interactive calls of this replica per model, as the batch runner sees them (docs/batches.md
// "Idle capacity"): every call through the API scope naming a model, from its handler's start to
// its response's close (queued, held, in an engine or streaming), batch lines left out. Counted at
// the door rather than from the demand board, which counts batch lines too and only from the
// engine on: the runner must hear of a call the moment it arrives, before it waits for a slot a
// line holds, to give that slot back (a preempted line). Other replicas' calls reach the runner
// through the fleet-wide demand (core/demand/demand.ts), a publish interval late.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

export class InteractiveLoad {
  private readonly byModel = new Map<string, number>();
  private readonly listeners = new Set<(model: string, arrived: boolean) => void>();

  /** Counts one call of `model`; the returned leave is idempotent. */
  enter(model: string): () => void {
    this.byModel.set(model, (this.byModel.get(model) ?? 0) + 1);
    this.tell(model, true);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const n = (this.byModel.get(model) ?? 1) - 1;
      if (n <= 0) this.byModel.delete(model);
      else this.byModel.set(model, n);
      this.tell(model, false);
    };
  }

  count(model: string): number {
    return this.byModel.get(model) ?? 0;
  }

  /** Called on every arrival and departure of a call. */
  listen(listener: (model: string, arrived: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private tell(model: string, arrived: boolean): void {
    for (const l of this.listeners) l(model, arrived);
  }
}

/**
 * Counts the API scope's calls on `load` by the catalogue id their body names (`resolve`: an alias
 * or unknown name gives the id or undefined, and an unknown model is not counted).
 */
export const interactiveLoadPlugin = fp(
  async (
    app: FastifyInstance,
    opts: { load: InteractiveLoad; resolve: (model: string) => string | undefined },
  ) => {
    app.addHook('preHandler', async (request: FastifyRequest, reply) => {
      if (request.batchLine !== null && request.batchLine !== undefined) return;
      const named = (request.body as { model?: unknown } | null | undefined)?.model;
      if (typeof named !== 'string') return;
      const model = opts.resolve(named);
      if (model === undefined) return;
      const leave = opts.load.enter(model);
      reply.raw.once('close', leave);
      if (reply.raw.writableFinished || reply.raw.destroyed) leave();
    });
  },
  { name: 'batch-interactive-load' },
);

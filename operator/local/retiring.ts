// A local scale-down, the acting half (autoscale/removal.ts decides): which engine processes go
// (the least loaded, by their own /metrics), and how they go without cutting a call — as a pod
// does (drain.ts): out of the catalogue first (the runtime syncs before handing them here), kept
// serving while that change reaches the proxies, then SIGTERM; an engine with a drain flag
// finishes its calls for up to the Model's drain time before SIGKILL, one without gets the drain
// time before SIGTERM instead. Drains run in the background so one file's drain stalls no other.
import { setTimeout as sleep } from 'node:timers/promises';
import { callsInEngine } from '../autoscale/engine-load.ts';
import { replicasToRemove } from '../autoscale/removal.ts';
import { engineDrain } from '../engines/index.ts';
import { DEFAULT_DRAIN_SECONDS } from '../fleet/drain.ts';
import type { EngineSpec } from '../model/spec.ts';
import type { EngineProcess } from './process.ts';

/** The `count` least-loaded processes (a process not ready, or not answering, goes first). */
export async function leastLoaded(
  processes: readonly EngineProcess[],
  count: number,
): Promise<{ leaving: EngineProcess[]; loads: { name: string; load: number | null }[] }> {
  const loads = await Promise.all(
    processes.map(async (p) => ({ name: p.url, load: p.ready ? await callsInEngine(p.url) : null })),
  );
  const names = new Set(replicasToRemove(loads, count));
  return {
    leaving: processes.filter((p) => names.has(p.url)),
    loads: loads.filter((l) => names.has(l.name)),
  };
}

export class Retiring {
  private readonly draining = new Map<EngineProcess, Promise<void>>();
  private readonly stopping = new AbortController();

  /** `propagationMs`: how long a removed process keeps serving (the catalogue change reaching the proxies). */
  constructor(private readonly propagationMs: number) {}

  retire(p: EngineProcess, engine: EngineSpec): void {
    const drainMs = (engine.drainSeconds ?? DEFAULT_DRAIN_SECONDS) * 1000;
    const holdMs = this.propagationMs + (engineDrain(engine).engineArgs.length > 0 ? 0 : drainMs);
    this.draining.set(
      p,
      this.stopAfter(p, holdMs, drainMs + 5_000).finally(() => this.draining.delete(p)),
    );
  }

  /** The runtime stops: every drain is cut short (SIGTERM now, SIGKILL after the usual 5 s). */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all([...this.draining.keys()].map((p) => p.stop()));
    await Promise.all(this.draining.values());
  }

  private async stopAfter(p: EngineProcess, holdMs: number, graceMs: number): Promise<void> {
    const { signal } = this.stopping;
    await sleep(holdMs, undefined, { signal }).catch(() => undefined);
    await p.stop(signal.aborted ? undefined : graceMs);
  }
}

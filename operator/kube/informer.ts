// A watch that survives (client-node ListWatch + pepr's watch processor): list, then watch from
// the resourceVersion; ListWatch itself re-lists on 410 Gone. On any other error ListWatch stops,
// so we restart it with exponential backoff (backoff.ts) — a warm informer too, whose restart
// skips the list and fails at the watch: only a list that returned, an event, or a watch that
// stayed up resets the backoff. A throwing callback is logged, never allowed to break the watch or
// crash the process. `waitSynced()` is what the runtime waits for before anyone reconciles.
import { type KubernetesObject, ListWatch } from '@kubernetes/client-node';
import { FailureCount, nextDelay } from './backoff.ts';
import type { KubeClient } from './client.ts';

export interface InformerOptions<T extends KubernetesObject> {
  name: string;
  apiVersion: string;
  kind: string;
  /** URL path of the collection, e.g. /apis/apps/v1/deployments. */
  path: string;
  namespace?: string;
  labelSelector?: string;
  onChange: (obj: T, event: 'add' | 'update' | 'delete') => void;
  onError?: (err: unknown) => void;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export class ResilientInformer<T extends KubernetesObject> {
  private listWatch: ListWatch<T> | undefined;
  private readonly failures: FailureCount;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private syncWaiters: ((synced: boolean) => void)[] = [];
  /** Restarts after an error; tests and /healthz read it. */
  restarts = 0;
  /** True once a list has succeeded: until then an empty cache means "unknown", not "none". */
  synced = false;

  constructor(
    private readonly kube: KubeClient,
    private readonly options: InformerOptions<T>,
  ) {
    // A watch that stayed up twice the longest delay was working: its next failure starts afresh.
    this.failures = new FailureCount(2 * (options.maxDelayMs ?? 30_000));
  }

  /**
   * Starts listing and watching, retrying until the API server answers. Resolves after the first
   * attempt whether it listed or not (see `synced`, `waitSynced()`).
   */
  async start(): Promise<void> {
    const o = this.options;
    const listWatch = new ListWatch<T>(
      o.path,
      this.kube.watch(),
      () => this.kube.list<T>(o.apiVersion, o.kind, o.namespace, o.labelSelector),
      false,
      o.labelSelector,
    );
    for (const event of ['add', 'update', 'delete'] as const) {
      listWatch.on(event, (obj: T) => this.deliver(obj, event));
    }
    listWatch.on('error', (err: unknown) => this.restartAfterError(err));
    this.listWatch = listWatch;
    await this.begin();
  }

  /** Resolves true once the first list has returned, false if the informer stops first. */
  waitSynced(): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /** ListWatch.start() reports a failed list through 'error' and resolves anyway. */
  private async begin(): Promise<void> {
    const listed = Boolean(this.listWatch?.latestResourceVersion());
    this.failures.restarted(Date.now());
    await this.listWatch?.start();
    if (!listed && this.listWatch?.latestResourceVersion()) {
      this.failures.succeed();
      if (!this.synced) this.settleSync(true);
    }
  }

  private settleSync(synced: boolean): void {
    this.synced = synced;
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const w of waiters) w(synced);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.listWatch?.stop();
    if (!this.synced) this.settleSync(false);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.listWatch?.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.listWatch?.list(namespace) ?? [];
  }

  private deliver(obj: T, event: 'add' | 'update' | 'delete'): void {
    this.failures.succeed();
    try {
      this.options.onChange(obj, event);
    } catch (err) {
      this.options.onError?.(
        new Error(`${this.options.name} ${event} handler failed for ${obj.metadata?.name}`, { cause: err }),
      );
    }
  }

  private restartAfterError(err: unknown): void {
    if (this.stopped) return;
    this.options.onError?.(new Error(`${this.options.name} watch failed; restarting`, { cause: err }));
    const delay = nextDelay(this.failures.fail(Date.now()), {
      baseMs: this.options.baseDelayMs ?? 500,
      maxMs: this.options.maxDelayMs ?? 30_000,
    });
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restarts++;
      // start() keeps the last resourceVersion: the watch resumes, or re-lists if it is too old.
      this.begin().catch((e: unknown) => this.restartAfterError(e));
    }, delay);
    this.restartTimer.unref();
  }
}

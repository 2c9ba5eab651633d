// A watch that survives (client-node ListWatch + pepr's watch processor): list, then watch from
// the resourceVersion; ListWatch itself re-lists on 410 Gone. On any other error ListWatch stops,
// so we restart it with exponential backoff. A throwing callback is logged, never allowed to
// break the watch or crash the process.
import { type KubernetesObject, ListWatch, Watch } from '@kubernetes/client-node';
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
  private attempts = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Restarts after an error; tests and /healthz read it. */
  restarts = 0;
  /** True once a list has succeeded: until then an empty cache means "unknown", not "none". */
  synced = false;

  constructor(
    private readonly kube: KubeClient,
    private readonly options: InformerOptions<T>,
  ) {}

  /** Resolves after the first list, so the cache is complete before anyone reconciles. */
  async start(): Promise<void> {
    const o = this.options;
    const listWatch = new ListWatch<T>(
      o.path,
      new Watch(this.kube.kubeConfig),
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

  /** ListWatch.start() reports a failed list through 'error' and resolves anyway. */
  private async begin(): Promise<void> {
    await this.listWatch?.start();
    if (this.listWatch?.latestResourceVersion()) {
      this.synced = true;
      this.attempts = 0;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.listWatch?.stop();
  }

  get(name: string, namespace?: string): T | undefined {
    return this.listWatch?.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.listWatch?.list(namespace) ?? [];
  }

  private deliver(obj: T, event: 'add' | 'update' | 'delete'): void {
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
    const base = this.options.baseDelayMs ?? 500;
    const delay = Math.min(this.options.maxDelayMs ?? 30_000, base * 2 ** this.attempts);
    this.attempts++;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restarts++;
      // start() keeps the last resourceVersion: the watch resumes, or re-lists if it is too old.
      this.begin().catch((e: unknown) => this.restartAfterError(e));
    }, delay);
    this.restartTimer.unref();
  }
}

// The few Kubernetes calls the operator makes, over client-node v1. Server-side apply with our
// field manager and force (we are the only writer of what we own); status through the status
// subresource; finalizers with a merge patch that carries resourceVersion, so a stale view fails
// with 409 and is retried instead of dropping someone else's finalizer. Every request but a watch
// is abandoned after `requestTimeoutMs`: client-node sets none, and a request on a connection that
// went silent (no FIN, no RST) would otherwise wait forever — holding up the leader's renewals.
// Watches are bounded their own way (watch.ts).
import {
  ApiException,
  type Configuration,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type RequestContext,
  setHeaderOptions,
  type Watch,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, GROUP, type Model, type ModelStatus, PLURAL, VERSION } from '../model/model.ts';
import { BoundedWatch, type WatchBounds } from './watch.ts';

export const isStatus = (err: unknown, code: number) =>
  (err instanceof ApiException && err.code === code) ||
  (typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code);
export const isNotFound = (err: unknown) => isStatus(err, 404);
export const isAlreadyExists = (err: unknown) => isStatus(err, 409);

/** ApiException messages carry the whole HTTP body; keep the API server's own message. */
export function describeError(err: unknown): string {
  if (err instanceof ApiException) {
    const body = typeof err.body === 'string' ? safeJson(err.body) : err.body;
    const message = (body as { message?: string } | undefined)?.message;
    return `HTTP ${err.code}: ${message ?? String(err.body).slice(0, 300)}`;
  }
  return err instanceof Error ? err.message : String(err);
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

export interface KubeClientOptions {
  /** Shorter than leader election's renew deadline allows (leadership.ts checks). Default 3.75 s. */
  requestTimeoutMs?: number;
  /** The API server ends each watch after this (randomized up to twice it). Default 5 min. */
  watchTimeoutSeconds?: number;
  /** A watch silent for its timeout plus this is dead and is aborted. Default 30 s. */
  watchIdleGraceMs?: number;
}

/**
 * The same KubeConfig, each request given an abort signal that fires after `ms`. client-node calls
 * a config's applySecurityAuthentication for every request of every generated API client and of
 * KubernetesObjectApi, so an object whose prototype is the caller's KubeConfig (everything else
 * read through to it, including in-cluster token refresh) and that overrides only that method
 * bounds them all. Watches go through applyToFetchOptions instead (watch.ts bounds them).
 */
function withRequestTimeout(kc: KubeConfig, ms: number): KubeConfig {
  const timed = Object.create(kc) as KubeConfig;
  timed.applySecurityAuthentication = async (context: RequestContext) => {
    await kc.applySecurityAuthentication(context);
    context.setSignal(AbortSignal.timeout(ms));
  };
  return timed;
}

export class KubeClient {
  readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;
  readonly requestTimeoutMs: number;
  private readonly timed: KubeConfig;
  private readonly watchBounds: WatchBounds;

  constructor(
    readonly kubeConfig: KubeConfig,
    options: KubeClientOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 3_750;
    this.watchBounds = {
      headersTimeoutMs: this.requestTimeoutMs,
      minTimeoutSeconds: options.watchTimeoutSeconds ?? 300,
      idleGraceMs: options.watchIdleGraceMs ?? 30_000,
    };
    this.timed = withRequestTimeout(kubeConfig, this.requestTimeoutMs);
    this.objects = KubernetesObjectApi.makeApiClient(this.timed);
    this.custom = this.timed.makeApiClient(CustomObjectsApi);
  }

  /** A Watch whose requests cannot hang forever (watch.ts). */
  watch(): Watch {
    return new BoundedWatch(this.kubeConfig, this.watchBounds);
  }

  /** A generated API client whose requests are bounded by the request timeout. */
  api<T>(Api: new (config: Configuration) => T): T {
    return this.timed.makeApiClient(Api as Parameters<KubeConfig['makeApiClient']>[0]) as T;
  }

  list<T extends KubernetesObject>(
    apiVersion: string,
    kind: string,
    namespace?: string,
    labelSelector?: string,
  ): Promise<KubernetesListObject<T>> {
    return this.objects.list<T>(
      apiVersion,
      kind,
      namespace,
      undefined,
      undefined,
      undefined,
      undefined,
      labelSelector,
    );
  }

  /** Server-side apply: creates or updates, and drops fields we no longer set. */
  apply<T extends KubernetesObject>(object: T): Promise<T> {
    return this.objects.patch(
      object,
      undefined,
      undefined,
      FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    );
  }

  /** Deletes in the background (dependents follow through the garbage collector). 404 is success. */
  async remove(
    apiVersion: string,
    kind: string,
    namespace: string,
    name: string,
    propagation: 'Background' | 'Foreground' = 'Background',
  ): Promise<void> {
    try {
      await this.objects.delete(
        { apiVersion, kind, metadata: { name, namespace } },
        undefined,
        undefined,
        undefined,
        undefined,
        propagation,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async patchModelStatus(model: Model, status: ModelStatus): Promise<void> {
    await this.custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: ns(model),
        name: model.metadata.name,
        body: { status },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /**
   * Writes the Model's replicas through its scale subresource, as `kubectl scale` and an HPA do:
   * the one field the scaler owns, so it never races the status or the spec's other fields. The
   * resourceVersion read makes it conditional: a Model written since gives 409 (scale-fence.ts).
   * Named by our field manager, so the Model's managedFields tell our writes from an HPA's
   * (autoscale/writers.ts).
   */
  async scaleModel(model: Model, replicas: number): Promise<void> {
    await this.custom.patchNamespacedCustomObjectScale(
      {
        ...modelPath(model),
        body: { metadata: { resourceVersion: model.metadata.resourceVersion }, spec: { replicas } },
        fieldManager: FIELD_MANAGER,
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /** Sets annotations on the Model, conditional on the resourceVersion read (409 if it moved). */
  async annotateModel(model: Model, annotations: Record<string, string>): Promise<Model> {
    const body = { metadata: { resourceVersion: model.metadata.resourceVersion, annotations } };
    return (await this.custom.patchNamespacedCustomObject(
      { ...modelPath(model), body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Model;
  }

  /** A Warning event on the Model (`kubectl describe model` lists it). */
  async warnModel(model: Model, reason: string, message: string): Promise<void> {
    const now = new Date();
    await this.objects.create({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${model.metadata.name}.`, namespace: ns(model) },
      involvedObject: {
        apiVersion: model.apiVersion,
        kind: 'Model',
        name: model.metadata.name,
        namespace: ns(model),
        ...(model.metadata.uid ? { uid: model.metadata.uid } : {}),
        ...(model.metadata.resourceVersion ? { resourceVersion: model.metadata.resourceVersion } : {}),
      },
      reason,
      message,
      type: 'Warning',
      source: { component: FIELD_MANAGER },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    } as KubernetesObject);
  }

  async readModel(model: Model): Promise<Model> {
    return (await this.custom.getNamespacedCustomObject(modelPath(model))) as Model;
  }

  async setFinalizers(model: Model, finalizers: string[]): Promise<void> {
    const body = { metadata: { finalizers, resourceVersion: model.metadata.resourceVersion } };
    await this.custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: ns(model),
        name: model.metadata.name,
        body,
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
}

const ns = (model: Model) => model.metadata.namespace ?? 'default';
const modelPath = (model: Model) => ({
  group: GROUP,
  version: VERSION,
  plural: PLURAL,
  namespace: ns(model),
  name: model.metadata.name,
});

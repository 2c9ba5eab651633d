// The Kubernetes runtime: informers feed a keyed queue; the leader plans and applies one Model at a
// time per key. Followers keep their caches warm so a takeover starts reconciling at once.
// A replica campaigns only once every informer has listed: a leader with a partial cache would
// plan from it (a GPU model with no endpoints, a Ready condition flipped). Each term's number fences
// the catalogue (catalogue-writer.ts) and the scaler's replicas (scale-fence.ts): the writers hold
// it while leading and drop it on step-down.
import { hostname } from 'node:os';
import type {
  KubernetesObject,
  V1Deployment,
  V1EndpointSlice,
  V1Job,
  V1Pod,
  V1Service,
} from '@kubernetes/client-node';
import { catalogueKey } from '../../core/catalogue/entry.ts';
import { observeBasePods } from '../adapters/apply.ts';
import { adaptersOf, planAdapterStep } from '../adapters/reconcile.ts';
import { runtimeScaler, type Scaler } from '../autoscale/scaler.ts';
import { describeWriter } from '../autoscale/writers.ts';
import { emptyFleet, type FleetConfig } from '../fleet/profiles.ts';
import { API_VERSION, type Model, modelKey, modelSource } from '../model/model.ts';
import { MANAGED_BY, MODEL_LABEL, modelNameFromOwned, ownedName } from '../model/owned.ts';
import { readyEndpoints } from '../reconcile/entry.ts';
import { desiredReplicas } from '../reconcile/objects.ts';
import { type Observed, planModel } from '../reconcile/plan.ts';
import { KeyedQueue } from '../runtime/queue.ts';
import type { Runtime, RuntimeDeps } from '../runtime/runtime.ts';
import { evictJobName, loadJobName, WEIGHTS_LABEL } from '../weights/objects.ts';
import { applyPlan } from './apply.ts';
import { describeError, type KubeClient } from './client.ts';
import { markDeletionCosts } from './deletion-cost.ts';
import { ResilientInformer } from './informer.ts';
import { LeaderElector } from './leader.ts';
import type { LeaseTimings } from './leadership.ts';
import { aliasesTaken, idOwner } from './name-claims.ts';
import { ScaleWriter } from './scale-fence.ts';

export interface KubernetesRuntimeOptions {
  /** Watch one namespace; all namespaces when unset. */
  namespace?: string;
  leaseNamespace: string;
  leaseName?: string;
  identity?: string;
  leaseDurationSeconds?: number;
  /** Overrides of the timings derived from the lease duration (tests scale them down). */
  timings?: Partial<LeaseTimings>;
  /** Re-plan every Model this often, healing anything a missed event left behind. */
  resyncMs?: number;
  /** Informer restart backoff (defaults 500 ms doubling to 30 s). */
  informerBackoff?: { baseDelayMs?: number; maxDelayMs?: number };
  /** Engine profiles and pod defaults (the chart's engines values, operator/fleet/profiles.ts). */
  fleet?: FleetConfig;
}

/** A Model as the informer holds it (metadata typed by client-node). */
type KubeModel = Model & KubernetesObject;

/** The label the Job controller puts on a Job's pods (Kubernetes 1.27 and later). */
const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

const managedSelector = Object.entries(MANAGED_BY)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

export class KubernetesRuntime implements Runtime {
  readonly kind = 'kubernetes' as const;
  readonly models: ResilientInformer<KubeModel>;
  private readonly deployments: ResilientInformer<V1Deployment>;
  private readonly services: ResilientInformer<V1Service>;
  private readonly slices: ResilientInformer<V1EndpointSlice>;
  private readonly pods: ResilientInformer<V1Pod>;
  private readonly jobs: ResilientInformer<V1Job>;
  readonly leader: LeaderElector;
  private readonly queue: KeyedQueue;
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The leader's scaler (when the proxies' demand is at hand), and its newest decision per Model. */
  private scaler: Scaler | undefined;
  private readonly scaling = new Map<string, Observed['autoscaling']>();
  /** The scaler's writes of replicas, fenced by the term as the catalogue's are. */
  readonly scaleWriter: ScaleWriter;
  /** Resolves once the caches listed and the election began (or the runtime stopped first). */
  campaigning: Promise<void> = Promise.resolve();

  constructor(
    private readonly kube: KubeClient,
    private readonly deps: RuntimeDeps,
    private readonly options: KubernetesRuntimeOptions,
  ) {
    const ns = options.namespace;
    const path = (group: string, plural: string) => `/${group}${ns ? `/namespaces/${ns}` : ''}/${plural}`;
    const onError = (err: unknown) => deps.log.warn({ err }, 'informer');
    const backoff = options.informerBackoff ?? {};
    const enqueueOwner = (
      obj: { metadata?: { name?: string; namespace?: string } },
      name?: string | null,
    ) => {
      if (!name) return;
      this.queue.add(`${obj.metadata?.namespace ?? ''}/${name}`);
      // Adapters of this Model follow its pods (operator/adapters/): a new pod needs them loaded.
      for (const a of adaptersOf(this.models.list(obj.metadata?.namespace), name))
        this.queue.add(modelKey(a));
    };
    this.models = new ResilientInformer<KubeModel>(kube, {
      name: 'models',
      apiVersion: API_VERSION,
      kind: 'Model',
      path: path(`apis/${API_VERSION}`, 'models'),
      namespace: ns,
      onError,
      ...backoff,
      onChange: (model, event) => {
        enqueueOwner(model, model.metadata.name);
        // A deleted Model may free an id a duplicate was waiting for.
        if (event === 'delete') this.enqueueSameId(model);
        // Any Model's id or aliases may take or free an alias of another: re-plan those with aliases.
        for (const m of this.models.list()) if (m.spec.aliases?.length) this.queue.add(modelKey(m));
      },
    });
    this.deployments = new ResilientInformer<V1Deployment>(kube, {
      name: 'deployments',
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      path: path('apis/apps/v1', 'deployments'),
      namespace: ns,
      labelSelector: managedSelector,
      onError,
      ...backoff,
      onChange: (d) => enqueueOwner(d, modelNameFromOwned(d.metadata?.name ?? '')),
    });
    this.services = new ResilientInformer<V1Service>(kube, {
      name: 'services',
      apiVersion: 'v1',
      kind: 'Service',
      path: path('api/v1', 'services'),
      namespace: ns,
      labelSelector: managedSelector,
      onError,
      ...backoff,
      onChange: (s) => enqueueOwner(s, modelNameFromOwned(s.metadata?.name ?? '')),
    });
    this.slices = new ResilientInformer<V1EndpointSlice>(kube, {
      name: 'endpointslices',
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      path: path('apis/discovery.k8s.io/v1', 'endpointslices'),
      namespace: ns,
      // The endpointslice controller copies the Service's labels onto its slices, so ours carry
      // managed-by too and the operator never caches the rest of the cluster's slices.
      labelSelector: `kubernetes.io/service-name,${managedSelector}`,
      onError,
      ...backoff,
      onChange: (s) =>
        enqueueOwner(s, modelNameFromOwned(s.metadata?.labels?.['kubernetes.io/service-name'] ?? '')),
    });
    // Engine pods and the weights Jobs' pods, for the scheduler's verdict (an unschedulable pod
    // shows on its Model at once). Both carry managed-by: engine pods the Model label, Job pods
    // the weights label (operator/weights/objects.ts).
    this.pods = new ResilientInformer<V1Pod>(kube, {
      name: 'pods',
      apiVersion: 'v1',
      kind: 'Pod',
      path: path('api/v1', 'pods'),
      namespace: ns,
      labelSelector: managedSelector,
      onError,
      ...backoff,
      onChange: (p) =>
        enqueueOwner(p, p.metadata?.labels?.[MODEL_LABEL] ?? p.metadata?.labels?.[WEIGHTS_LABEL]),
    });
    // Weight loader and evictor Jobs (operator/weights/): their state is the WeightsCached condition.
    this.jobs = new ResilientInformer<V1Job>(kube, {
      name: 'jobs',
      apiVersion: 'batch/v1',
      kind: 'Job',
      path: path('apis/batch/v1', 'jobs'),
      namespace: ns,
      labelSelector: `${WEIGHTS_LABEL},${managedSelector}`,
      onError,
      ...backoff,
      onChange: (j) => enqueueOwner(j, j.metadata?.labels?.[WEIGHTS_LABEL]),
    });
    this.queue = new KeyedQueue((key) => this.reconcile(key), {
      onError: (key, err, attempt) => {
        deps.metrics?.reconcileErrors.inc();
        deps.log.warn(
          { model: key, attempt, err: describeError(err) },
          'reconcile failed; retrying with backoff',
        );
      },
    });
    this.scaleWriter = new ScaleWriter(kube);
    this.leader = new LeaderElector(kube, {
      namespace: options.leaseNamespace,
      name: options.leaseName ?? 'modelplane-operator',
      identity: options.identity ?? `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
      leaseDurationSeconds: options.leaseDurationSeconds,
      ...(options.timings ? { timings: options.timings } : {}),
      termFloor: () => deps.catalogue.newestTerm(),
      onStartedLeading: (term) => {
        deps.metrics?.leader.set(1);
        this.scaleWriter.lead(term);
        deps.log.info({ term }, 'became leader; fencing the catalogue, then reconciling every Model');
        deps.catalogue
          .lead(term)
          .catch((err: unknown) => deps.log.warn({ err, term }, 'catalogue fence claim failed'))
          .finally(() => {
            if (!this.leader.isLeader) return;
            this.enqueueAll();
            void this.sweepOrphans();
          });
      },
      onStoppedLeading: () => {
        deps.catalogue.follow();
        this.scaleWriter.follow();
        deps.metrics?.leader.set(0);
        deps.log.info('not the leader any more; reconciles and catalogue writes stopped');
      },
      onError: (err) => deps.log.warn({ err: describeError(err) }, 'leader election'),
    });
  }

  /** The scaler over this runtime's caches: it writes replicas through the scale subresource. */
  private startScaler(): void {
    this.scaler ??= runtimeScaler(this.deps, {
      isLeader: () => this.leader.isLeader && this.cachesSynced,
      targets: () =>
        this.models
          .list()
          .filter((m) => m.spec.engine?.autoscaling !== undefined)
          .map((m) => {
            const slices = this.slicesOf(m);
            return {
              key: modelKey(m),
              model: m,
              current: desiredReplicas(m.spec.engine!),
              endpoints: readyEndpoints(slices),
            };
          }),
      setReplicas: async (t, replicas) => {
        // Lowering: the idlest pods first (deletion-cost.ts); a failure there only loses the order.
        if (replicas < t.current) {
          const namespace = t.model.metadata.namespace ?? 'default';
          await markDeletionCosts(this.kube, namespace, this.slicesOf(t.model)).catch((err: unknown) =>
            this.deps.log.warn({ model: t.key, err: describeError(err) }, 'pod deletion costs not set'),
          );
        }
        await this.scaleWriter.scale(t.model, replicas);
      },
      claim: (t) => this.scaleWriter.claim(t.model),
      secondWriter: (t, writer) => {
        const message = `replicas written by ${describeWriter(writer)}: the operator stopped writing them (one writer; see the Scaling condition)`;
        this.deps.log.warn({ model: t.key, writer }, message);
        this.queue.add(t.key); // the status says so (autoscale/status.ts)
        this.kube
          .warnModel(t.model, 'SecondReplicasWriter', message)
          .catch((err: unknown) =>
            this.deps.log.warn({ model: t.key, err: describeError(err) }, 'event not written'),
          );
      },
      decided: (key, result) => {
        this.scaling.set(key, result);
        this.queue.add(key);
      },
    });
    this.scaler?.start(this.deps.scaleIntervalMs ?? 2_000);
  }

  /** A weights Job's pods, from the cache (the Job controller labels each with its Job's name). */
  private jobPods(namespace: string, job: string): V1Pod[] {
    return this.pods
      .list(namespace)
      .filter((p) => p.metadata?.labels?.[WEIGHTS_LABEL] && p.metadata.labels[JOB_NAME_LABEL] === job);
  }

  /** The Model's EndpointSlices, from the cache. */
  private slicesOf(m: Model): V1EndpointSlice[] {
    const owned = ownedName(m);
    return this.slices
      .list(m.metadata.namespace)
      .filter((s) => s.metadata?.labels?.['kubernetes.io/service-name'] === owned);
  }

  private get informers() {
    return [this.models, this.deployments, this.services, this.slices, this.pods, this.jobs];
  }

  private get cachesSynced(): boolean {
    return this.informers.every((i) => i.synced);
  }

  /** Starts the informers; the election begins once every one has listed (`campaigning`). */
  async start(): Promise<void> {
    this.stopped = false;
    await Promise.all(this.informers.map((i) => i.start()));
    this.campaigning = Promise.all(this.informers.map((i) => i.waitSynced())).then((synced) => {
      if (this.stopped || !synced.every(Boolean)) return;
      this.deps.log.info('every cache listed; campaigning for leadership');
      this.leader.start();
    });
    this.resyncTimer = setInterval(() => {
      this.enqueueAll();
      void this.sweepOrphans();
    }, this.options.resyncMs ?? 300_000);
    this.resyncTimer.unref();
    this.startScaler();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await this.scaler?.stop();
    this.queue.stop();
    await this.leader.stop();
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.campaigning;
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  healthy() {
    return {
      ok: this.cachesSynced,
      detail: {
        runtime: this.kind,
        leader: this.leader.isLeader,
        term: this.leader.term,
        queued: this.queue.size,
        restarts: this.informers.reduce((n, i) => n + i.restarts, 0),
      },
    };
  }

  *conditions() {
    for (const m of this.models.list()) yield m.status?.conditions;
  }

  private enqueueAll(): void {
    for (const m of this.models.list()) this.queue.add(modelKey(m));
  }

  private enqueueSameId(model: Model): void {
    const id = catalogueKey(model.spec.id);
    for (const m of this.models.list()) if (catalogueKey(m.spec.id) === id) this.queue.add(modelKey(m));
  }

  private async reconcile(key: string): Promise<void> {
    if (!this.leader.isLeader || !this.cachesSynced) return;
    const [namespace, name] = key.split('/') as [string, string];
    const model = this.models.get(name, namespace);
    if (!model) {
      this.scaling.delete(key);
      return; // gone: the finalizer already cleaned the catalogue
    }
    this.deps.log.debug({ model: key, resourceVersion: model.metadata.resourceVersion }, 'reconciling');
    const end = this.deps.metrics?.reconcileSeconds.startTimer();
    const owned = ownedName(model);
    try {
      const base = model.spec.adapter && this.models.get(model.spec.adapter.base, namespace);
      const planned = planModel(
        model,
        {
          deployment: this.deployments.get(owned, namespace) ?? null,
          serviceExists: this.services.get(owned, namespace) !== undefined,
          endpointSlices: this.slicesOf(model),
          idClaimedBy: model.metadata.deletionTimestamp ? undefined : idOwner(model, this.models.list()),
          aliasesTaken: aliasesTaken(model, this.models.list()),
          now: new Date().toISOString(),
          autoscaling: this.scaling.get(key),
          pods: this.pods.list(namespace).filter((p) => p.metadata?.labels?.[MODEL_LABEL] === name),
          weights: {
            loadJob: this.jobs.get(loadJobName(model), namespace) ?? null,
            evictJob: this.jobs.get(evictJobName(model), namespace) ?? null,
            loadPods: this.jobPods(namespace, loadJobName(model)),
            evictPods: this.jobPods(namespace, evictJobName(model)),
          },
        },
        this.options.fleet ?? emptyFleet,
      );
      const urls = base ? readyEndpoints(this.slicesOf(base)) : [];
      const pods = base ? await observeBasePods(urls) : [];
      const step = planAdapterStep(model, planned, base || undefined, pods, new Date().toISOString());
      const { plan, ...result } = await applyPlan(model, step, {
        kube: this.kube,
        catalogue: this.deps.catalogue,
      });
      if (result.catalogueChanged) this.deps.metrics?.catalogueWrites.inc();
      // A deleted adapter a base engine refused to unload: tried again after the queue's backoff.
      if (plan.retry) throw new Error(plan.retry);
      this.deps.metrics?.reconciles.inc({ result: 'success' });
      if (result.catalogueChanged || result.statusWritten) {
        this.deps.log.info({ model: key, reasons: plan.reasons }, 'reconciled');
      }
    } catch (err) {
      this.deps.metrics?.reconciles.inc({ result: 'error' });
      throw new Error(`reconcile ${key}: ${describeError(err)}`, { cause: err });
    } finally {
      end?.();
    }
  }

  /** Entries whose Model vanished without the finalizer running (someone removed it by hand). */
  private async sweepOrphans(): Promise<void> {
    const informers = [this.models];
    if (!this.leader.isLeader || !informers.every((i) => i.synced) || this.options.namespace) return;
    const live = new Set(this.models.list().map((m) => modelSource(m)));
    try {
      const removed = await this.deps.catalogue.removeOrphans('Model/', (source) => live.has(source));
      if (removed.length) this.deps.log.warn({ removed }, 'removed catalogue entries of vanished Models');
    } catch (err) {
      this.deps.log.warn({ err }, 'orphan sweep failed');
    }
  }
}

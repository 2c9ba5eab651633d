// The local runtime behind `make dev`: Model YAML files in one folder (not its subfolders), watched
// with fs.watch plus a periodic rescan (fs.watch misses events on some filesystems). Engines run
// as child processes; readiness of those processes stands in for EndpointSlices, and the same
// planModel decides what goes into the catalogue, so both runtimes catalogue alike.
import { type FSWatcher, watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { parse } from 'yaml';
import type { NameClaim } from '../../core/catalogue/aliases.ts';
import { applyAdapterStep, applyUnloads, observeBasePods } from '../adapters/apply.ts';
import { adapterUnloads, planAdapterStep } from '../adapters/reconcile.ts';
import { runtimeScaler, type Scaler } from '../autoscale/scaler.ts';
import { acceptedEngines } from '../engines/index.ts';
import { type Model, type ModelStatus, parseModel } from '../model/model.ts';
import { desiredReplicas } from '../reconcile/objects.ts';
import { type Observed, planModel } from '../reconcile/plan.ts';
import { KeyedQueue } from '../runtime/queue.ts';
import type { Runtime, RuntimeDeps } from '../runtime/runtime.ts';
import { claimAliasesByFile } from './alias-claims.ts';
import { processSpecFor } from './engine-command.ts';
import { EngineProcess } from './process.ts';
import { processKey } from './process-key.ts';
import { leastLoaded, Retiring } from './retiring.ts';
import { rolledOut, startRollout } from './rollout.ts';

export interface LocalRuntimeOptions {
  dir: string;
  /** Working directory of engine processes (the repo root, where engines/simulator lives). */
  cwd: string;
  host?: string;
  rescanMs?: number;
  /** How long a removed process keeps serving before SIGTERM: the catalogue's change reaching the proxies. */
  propagationMs?: number;
}

interface LocalModel {
  file: string;
  source: string;
  raw: string;
  model: Model;
  engineKey: string;
  /** Its engine processes, one per replica (spec.engine.replicas, or the scaler's count). */
  processes: EngineProcess[];
  /** An earlier engine's processes, serving until the new ones are all ready (rollout.ts). */
  outgoing: EngineProcess[];
  /** The scaler's replicas for an autoscaled Model (the file is the admin's; this is ours). */
  scaled?: number | undefined;
  status?: ModelStatus | undefined;
}

export class LocalRuntime implements Runtime {
  readonly kind = 'local' as const;
  private readonly models = new Map<string, LocalModel>();
  private readonly queue: KeyedQueue;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private scanned = false;
  private readonly warned = new Map<string, string>();
  /** The scaler (when the proxies' demand is at hand), and its newest decision per file. */
  private scaler: Scaler | undefined;
  private readonly scaling = new Map<string, Observed['autoscaling']>();
  /** Per file: its aliases an earlier file (in name order) or another file's id holds. */
  private aliasesTaken = new Map<string, NameClaim[]>();
  /** Processes a scale-down is draining. */
  private readonly retiring: Retiring;

  constructor(
    private readonly deps: RuntimeDeps,
    private readonly options: LocalRuntimeOptions,
  ) {
    this.retiring = new Retiring(options.propagationMs ?? 1_000);
    this.queue = new KeyedQueue((key) => this.work(key), {
      concurrency: 1,
      onError: (key, err) => deps.log.warn({ key, err }, 'local runtime'),
    });
  }

  private async work(key: string): Promise<void> {
    if (key === 'scan') return this.scan();
    if (key.startsWith('fit:')) {
      const m = this.models.get(key.slice('fit:'.length));
      if (m) await this.fit(m);
      return this.sync(key.slice('fit:'.length));
    }
    return this.sync(key);
  }

  async start(): Promise<void> {
    this.queue.add('scan');
    await this.queue.idle();
    this.watcher = watch(this.options.dir, () => this.queue.add('scan'));
    this.watcher.on('error', (err) => this.deps.log.warn({ err }, 'fs.watch failed; relying on rescans'));
    this.timer = setInterval(() => this.queue.add('scan'), this.options.rescanMs ?? 2_000);
    this.timer.unref();
    this.deps.metrics?.leader.set(1);
    this.startScaler();
  }

  /** Locally the one operator is the leader: its scaler starts and stops engine processes. */
  private startScaler(): void {
    this.scaler ??= runtimeScaler(this.deps, {
      isLeader: () => true,
      targets: () =>
        [...this.models.values()]
          .filter((m) => m.model.spec.engine?.autoscaling !== undefined)
          .map((m) => ({
            key: m.file,
            model: { ...m.model, ...(m.status ? { status: m.status } : {}) },
            current: this.wanted(m),
            endpoints: m.processes.filter((p) => p.ready).map((p) => p.url),
          })),
      setReplicas: async (t, replicas) => {
        const m = this.models.get(t.key);
        if (!m) return;
        m.scaled = replicas;
        // Through the queue: one file's processes change one step at a time.
        this.queue.add(`fit:${t.key}`);
      },
      decided: (key, result) => {
        this.scaling.set(key, result);
        this.queue.add(key);
      },
    });
    this.scaler?.start(this.deps.scaleIntervalMs ?? 2_000);
  }

  async stop(): Promise<void> {
    this.watcher?.close();
    clearInterval(this.timer);
    this.queue.stop();
    await this.scaler?.stop();
    await Promise.all(
      [...this.models.values()].flatMap((m) => [...m.processes, ...m.outgoing].map((p) => p.stop())),
    );
    await this.retiring.stop();
  }

  idle(): Promise<void> {
    return this.queue.idle();
  }

  healthy() {
    return {
      ok: this.scanned,
      detail: { runtime: this.kind, models: this.models.size, dir: this.options.dir },
    };
  }

  /** The first engine process of a Model file, if it runs one (tests). */
  engine(file: string): EngineProcess | undefined {
    return this.models.get(file)?.processes[0];
  }

  /** Every engine process of a Model file (one per replica). */
  engines(file: string): readonly EngineProcess[] {
    return this.models.get(file)?.processes ?? [];
  }

  *conditions() {
    for (const m of this.models.values()) yield m.status?.conditions;
  }

  /** Reads the folder and brings processes and catalogue in line with it. */
  private async scan(): Promise<void> {
    const names = (await readdir(this.options.dir)).filter((n) => /\.ya?ml$/.test(n)).sort();
    const keep = new Set<string>();
    const ids = new Map<string, string>();
    for (const name of names) {
      const file = join(this.options.dir, name);
      const read = await this.read(file);
      if (!read) continue;
      const id = read.model.spec.id.toLowerCase();
      const claimedBy = ids.get(id);
      if (claimedBy) {
        this.warnOnce(
          file,
          read.raw,
          { file, id: read.model.spec.id, claimedBy },
          'duplicate model id; file ignored',
        );
        continue;
      }
      ids.set(id, file);
      keep.add(file);
      if (this.models.get(file)?.raw !== read.raw) await this.activate(file, read.raw, read.model);
    }
    for (const file of [...this.models.keys()]) if (!keep.has(file)) await this.forget(file);
    this.claimAliases([...keep]);
    if (!this.scanned) await this.removeVanished();
    this.scanned = true;
  }

  /** Files are ranked by name, as ids are: a later file yields an alias an earlier one holds. */
  private claimAliases(files: readonly string[]): void {
    const { taken, changed } = claimAliasesByFile(files, (f) => this.models.get(f)!, this.aliasesTaken);
    this.aliasesTaken = taken;
    for (const file of changed) this.queue.add(file);
  }

  /** The file's Model; an unreadable or invalid file keeps the last good version running. */
  private async read(file: string): Promise<{ raw: string; model: Model } | undefined> {
    const previous = this.models.get(file);
    const last = previous && { raw: previous.raw, model: previous.model };
    let raw: string;
    try {
      raw = await readFile(file, 'utf8');
    } catch {
      return last;
    }
    if (previous?.raw === raw) return last;
    let doc: unknown;
    try {
      doc = parse(raw);
    } catch (err) {
      this.warnOnce(file, raw, { file, err: (err as Error).message }, 'not valid YAML; ignored');
      return last;
    }
    const parsed = parseModel(doc, acceptedEngines());
    if (!parsed.ok) {
      this.warnOnce(file, raw, { file, problems: parsed.problems }, 'invalid Model; ignored');
      return last;
    }
    const info = await stat(file);
    parsed.model.metadata.creationTimestamp = new Date(info.birthtimeMs || info.mtimeMs).toISOString();
    return { raw, model: parsed.model };
  }

  /** Rescans run every few seconds; say what is wrong with a file once per version of it. */
  private warnOnce(file: string, raw: string, detail: object, message: string): void {
    if (this.warned.get(file) === raw) return;
    this.warned.set(file, raw);
    this.deps.log.warn(detail, message);
  }

  private async activate(file: string, raw: string, model: Model): Promise<void> {
    const previous = this.models.get(file);
    const source = `local:${relative(this.options.cwd, file)}`;
    const engineKey = processKey(model);
    const entry: LocalModel = {
      file,
      source,
      raw,
      model,
      engineKey,
      processes: previous?.processes ?? [],
      outgoing: previous?.outgoing ?? [],
      scaled: model.spec.engine?.autoscaling ? previous?.scaled : undefined,
    };
    if (previous && previous.model.spec.id.toLowerCase() !== model.spec.id.toLowerCase()) {
      await this.deps.catalogue.remove(previous.model.spec.id, previous.source);
    }
    if (previous && previous.engineKey !== engineKey) {
      // A new engine: a rollout with a surge (rollout.ts). The old processes that serve keep
      // serving until the new ones (started on other ports) are all ready.
      const { outgoing, useless } = startRollout(previous);
      for (const p of useless) this.retiring.retire(p, previous.model.spec.engine!);
      entry.outgoing = outgoing;
      entry.processes = [];
    }
    this.models.set(file, entry);
    await this.fit(entry);
    this.queue.add(file);
  }

  private async startEngine(m: LocalModel): Promise<EngineProcess | undefined> {
    const spec = await processSpecFor(m.model, this.options.host ?? '127.0.0.1', this.options.cwd);
    if (!spec) {
      this.deps.log.warn(
        { file: m.file, engine: m.model.spec.engine?.type },
        'the local runtime runs the simulator or spec.engine.command; this Model stays uncatalogued',
      );
      return undefined;
    }
    const proc = new EngineProcess(spec, this.deps.log, () => this.queue.add(m.file));
    proc.start();
    return proc;
  }

  /** Replicas the Model should run now: the scaler's count, else the file's (within min..max). */
  private wanted(m: LocalModel): number {
    const engine = m.model.spec.engine;
    return engine === undefined ? 0 : (m.scaled ?? desiredReplicas(engine));
  }

  /**
   * Starts or stops engine processes until there are as many as wanted. A scale-down removes the
   * least-loaded processes (autoscale/removal.ts) and drains them (local/retiring.ts).
   */
  private async fit(m: LocalModel): Promise<void> {
    const want = this.wanted(m);
    while (m.processes.length < want) {
      const started = await this.startEngine(m);
      if (started === undefined) return;
      m.processes.push(started);
    }
    const excess = m.processes.length - want;
    if (excess <= 0) return;
    const { leaving, loads } = await leastLoaded(m.processes, excess);
    m.processes = m.processes.filter((p) => !leaving.includes(p));
    this.deps.log.info(
      { file: m.source, replicas: want, removed: loads },
      'draining the least-loaded engine processes to follow replicas',
    );
    // Out of the catalogue first (we run inside the queue, so sync at once), then drained.
    await this.sync(m.file);
    for (const p of leaving) this.retiring.retire(p, m.model.spec.engine!);
  }

  /** Plans one file's Model with its processes standing in for an EndpointSlice. */
  private async sync(file: string): Promise<void> {
    const m = this.models.get(file);
    if (!m) return;
    const done = rolledOut(m.processes, m.outgoing, this.wanted(m));
    if (done) m.outgoing = [];
    // One slice per process: each has its own port, as pods on one node would not.
    const slices: V1EndpointSlice[] = [...m.processes, ...m.outgoing].map((p) => ({
      addressType: 'IPv4',
      endpoints: [{ addresses: [p.spec.host], conditions: { ready: p.ready } }],
      ports: [
        { name: 'http', port: p.spec.port },
        ...(p.spec.kvPorts
          ? [
              { name: 'kv-events', port: p.spec.kvPorts.events },
              { name: 'kv-replay', port: p.spec.kvPorts.replay },
            ]
          : []),
      ],
    }));
    const model = { ...m.model, status: m.status };
    const planned = planModel(model, {
      deployment: null,
      serviceExists: false,
      endpointSlices: slices,
      now: new Date().toISOString(),
      source: m.source,
      autoscaling: this.scaling.get(file),
      aliasesTaken: this.aliasesTaken.get(file) ?? [],
    });
    // An adapter Model is loaded on its base's ready processes (operator/adapters/), by metadata.name.
    const name = m.model.metadata.name;
    const base = this.baseOf(m.model);
    const pods = base.model ? await observeBasePods(base.urls) : [];
    // No finalizer here: the loads straight away, then the plan they settle.
    const plan = await applyAdapterStep(
      planAdapterStep(model, planned, base.model, pods, new Date().toISOString()),
    );
    for (const a of this.models.values()) if (a.model.spec.adapter?.base === name) this.queue.add(a.file);
    const action = plan.catalogue;
    let changed = false;
    if (action.action === 'put') changed = await this.deps.catalogue.put(action.entry);
    if (action.action === 'remove') changed = await this.deps.catalogue.remove(action.id, action.source);
    if (changed) {
      this.deps.metrics?.catalogueWrites.inc();
      this.deps.log.info({ file: m.source, reasons: plan.reasons.slice(-1) }, 'catalogue updated');
    }
    m.status = plan.status ?? undefined;
    this.deps.metrics?.reconciles.inc({ result: 'success' });
    // Out of the catalogue now (the write above), the earlier engine drains as a scale-down's would.
    for (const p of done ?? []) this.retiring.retire(p, m.model.spec.engine!);
  }

  /** Entries of files deleted while no operator ran (the last run was stopped or killed). */
  private async removeVanished(): Promise<void> {
    const prefix = `local:${relative(this.options.cwd, this.options.dir)}/`;
    const live = new Set([...this.models.values()].map((m) => m.source));
    const removed = await this.deps.catalogue.removeOrphans(prefix, (source) => live.has(source));
    if (removed.length) this.deps.log.info({ removed }, 'removed entries of model files deleted meanwhile');
  }

  /** An adapter's base (by metadata.name) and its ready processes' URLs; none for other Models. */
  private baseOf(model: Model): { model?: Model; urls: string[] } {
    const base = [...this.models.values()].find((b) => b.model.metadata.name === model.spec.adapter?.base);
    return { model: base?.model, urls: base?.processes.filter((p) => p.ready).map((p) => p.url) ?? [] };
  }

  private async forget(file: string): Promise<void> {
    const m = this.models.get(file);
    if (!m) return;
    this.models.delete(file);
    this.scaling.delete(file);
    for (const a of this.models.values())
      if (a.model.spec.adapter?.base === m.model.metadata.name) this.queue.add(a.file);
    await Promise.all([...m.processes, ...m.outgoing].map((p) => p.stop()));
    if (await this.deps.catalogue.remove(m.model.spec.id, m.source)) this.deps.metrics?.catalogueWrites.inc();
    // Out of the catalogue, an adapter is unloaded from its base's engines (no finalizer to hold here).
    const base = this.baseOf(m.model);
    const pods = base.model ? await observeBasePods(base.urls) : [];
    const failures = await applyUnloads(adapterUnloads(m.model, base.model, pods));
    if (failures.size)
      this.deps.log.warn({ file: m.source, failures: Object.fromEntries(failures) }, 'adapter unload failed');
    this.deps.log.info({ file: m.source, id: m.model.spec.id }, 'model file removed; engine stopped');
  }
}

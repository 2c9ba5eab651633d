// The local runtime behind `make dev`: Model YAML files in one folder (not its subfolders), watched
// with fs.watch plus a periodic rescan (fs.watch misses events on some filesystems). Engines run
// as child processes; readiness of those processes stands in for EndpointSlices, and the same
// planModel decides what goes into the catalogue, so both runtimes catalogue alike.
import { type FSWatcher, watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { freePort } from '../../core/free-port.ts';
import { type Model, type ModelStatus, parseModel } from '../model.ts';
import { planModel } from '../plan.ts';
import { KeyedQueue } from '../queue.ts';
import type { Runtime, RuntimeDeps } from '../runtime.ts';
import { canonical } from '../status.ts';
import { EngineProcess } from './process.ts';

export interface LocalRuntimeOptions {
  dir: string;
  /** Working directory of engine processes (the repo root, where engines/simulator lives). */
  cwd: string;
  host?: string;
  rescanMs?: number;
}

interface LocalModel {
  file: string;
  source: string;
  raw: string;
  model: Model;
  engineKey: string;
  process?: EngineProcess | undefined;
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

  constructor(
    private readonly deps: RuntimeDeps,
    private readonly options: LocalRuntimeOptions,
  ) {
    this.queue = new KeyedQueue((key) => (key === 'scan' ? this.scan() : this.sync(key)), {
      concurrency: 1,
      onError: (key, err) => deps.log.warn({ key, err }, 'local runtime'),
    });
  }

  async start(): Promise<void> {
    this.queue.add('scan');
    await this.queue.idle();
    this.watcher = watch(this.options.dir, () => this.queue.add('scan'));
    this.watcher.on('error', (err) => this.deps.log.warn({ err }, 'fs.watch failed; relying on rescans'));
    this.timer = setInterval(() => this.queue.add('scan'), this.options.rescanMs ?? 2_000);
    this.timer.unref();
    this.deps.metrics?.leader.set(1);
  }

  async stop(): Promise<void> {
    this.watcher?.close();
    clearInterval(this.timer);
    this.queue.stop();
    await Promise.all([...this.models.values()].map((m) => m.process?.stop()));
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

  /** The engine process of a Model file, if it runs one (tests). */
  engine(file: string): EngineProcess | undefined {
    return this.models.get(file)?.process;
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
    if (!this.scanned) await this.removeVanished();
    this.scanned = true;
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
    const parsed = parseModel(doc);
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
    const engineKey = canonical(model.spec.engine ?? null);
    const entry: LocalModel = { file, source, raw, model, engineKey, process: previous?.process };
    if (previous && previous.model.spec.id.toLowerCase() !== model.spec.id.toLowerCase()) {
      await this.deps.catalogue.remove(previous.model.spec.id, previous.source);
    }
    if (previous?.process && previous.engineKey !== engineKey) {
      await previous.process.stop();
      entry.process = undefined;
    }
    this.models.set(file, entry);
    if (!entry.process) entry.process = await this.startEngine(entry);
    this.queue.add(file);
  }

  private async startEngine(m: LocalModel): Promise<EngineProcess | undefined> {
    const engine = m.model.spec.engine;
    if (!engine) return undefined;
    const host = this.options.host ?? '127.0.0.1';
    const port = await freePort(host);
    const fill = (s: string) => s.replaceAll('{port}', String(port)).replaceAll('{host}', host);
    let command: string;
    let args: string[];
    let kvPorts: { events: number; replay: number } | undefined;
    if (engine.command?.length) {
      [command, ...args] = [...engine.command.map(fill), ...(engine.args ?? []).map(fill)] as [
        string,
        ...string[],
      ];
    } else if (engine.type === 'simulator') {
      command = process.execPath;
      const served = m.model.spec.servedName ?? m.model.spec.id;
      args = ['--import', 'tsx', 'engines/simulator/main.ts', '--host', host, '--port', String(port)];
      args.push('--models', served);
      // Its KV events, as vLLM's --kv-events-config: the proxies' prefix index follows them.
      kvPorts = { events: await freePort(host), replay: await freePort(host) };
      args.push('--kv-events-endpoint', `tcp://${host}:${kvPorts.events}`);
      args.push('--kv-events-replay-endpoint', `tcp://${host}:${kvPorts.replay}`);
      args.push(...(engine.args ?? []));
    } else {
      this.deps.log.warn(
        { file: m.file, engine: engine.type },
        'the local runtime runs the simulator or spec.engine.command; this Model stays uncatalogued',
      );
      return undefined;
    }
    const env = Object.fromEntries((engine.env ?? []).map((e) => [e.name, e.value ?? '']));
    const proc = new EngineProcess(
      {
        name: m.model.spec.id,
        command,
        args,
        env: { ...env, PORT: String(port) },
        cwd: this.options.cwd,
        host,
        port,
        ...(kvPorts ? { kvPorts } : {}),
      },
      this.deps.log,
      () => this.queue.add(m.file),
    );
    proc.start();
    return proc;
  }

  /** Plans one file's Model with its process standing in for an EndpointSlice. */
  private async sync(file: string): Promise<void> {
    const m = this.models.get(file);
    if (!m) return;
    const p = m.process;
    const slices: V1EndpointSlice[] = p
      ? [
          {
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
          },
        ]
      : [];
    const model = { ...m.model, status: m.status };
    const plan = planModel(model, {
      deployment: null,
      serviceExists: false,
      endpointSlices: slices,
      now: new Date().toISOString(),
      source: m.source,
    });
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
  }

  /** Entries of files deleted while no operator ran (the last run was stopped or killed). */
  private async removeVanished(): Promise<void> {
    const prefix = `local:${relative(this.options.cwd, this.options.dir)}/`;
    const live = new Set([...this.models.values()].map((m) => m.source));
    const removed = await this.deps.catalogue.removeOrphans(prefix, (source) => live.has(source));
    if (removed.length) this.deps.log.info({ removed }, 'removed entries of model files deleted meanwhile');
  }

  private async forget(file: string): Promise<void> {
    const m = this.models.get(file);
    if (!m) return;
    this.models.delete(file);
    await m.process?.stop();
    if (await this.deps.catalogue.remove(m.model.spec.id, m.source)) this.deps.metrics?.catalogueWrites.inc();
    this.deps.log.info({ file: m.source, id: m.model.spec.id }, 'model file removed; engine stopped');
  }
}

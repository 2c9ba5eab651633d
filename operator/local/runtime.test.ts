// The local runtime with real files, real child processes (the simulator and a configured
// command) and a real Redis.
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { DemandStore } from '../../core/demand/demand.ts';
import { DemandBoard } from '../../proxy/demand/board.ts';
import { DemandPublisher } from '../../proxy/demand/publisher.ts';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { chatModel, withSpec } from '../fixtures.ts';
import type { Model } from '../model/model.ts';
import { CatalogueWriter } from '../runtime/catalogue-writer.ts';
import { LocalRuntime } from './runtime.ts';

const repo = resolve(import.meta.dirname, '..', '..');
let redis: TestRedis;
let store: CatalogueStore;
let dir: string;
let runtime: LocalRuntime;

const waitFor = async <T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 15_000) => {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

/** A stand-in engine for `spec.engine.command`: any HTTP server on {port}. */
const tinyServer = `require('node:http').createServer((q, s) => s.end('{"data":[]}')).listen(Number(process.env.PORT), '127.0.0.1')`;

function write(name: string, model: Model): string {
  const file = join(dir, name);
  const { apiVersion, kind, metadata, spec } = model;
  writeFileSync(file, stringify({ apiVersion, kind, metadata: { name: metadata.name }, spec }));
  return file;
}

const commandModel = (price: string) =>
  withSpec(chatModel('tiny'), {
    id: 'Acme/Tiny-Chat',
    engine: { type: 'custom', image: 'unused-locally', command: [process.execPath, '-e', tinyServer] },
    pricing: { USD: { input: price, output: '1' } },
  });

beforeAll(async () => {
  redis = await startRedis();
  store = new CatalogueStore(redis.client());
  dir = mkdtempSync(join(tmpdir(), 'mp-models-'));
  write('llama.yaml', chatModel('llama'));
  write('tiny.yaml', commandModel('0.5'));
  write(
    'soon.yaml',
    withSpec(chatModel('soon'), { id: 'Acme/Soon', engine: undefined, availability: 'comingSoon' }),
  );
  writeFileSync(join(dir, 'broken.yaml'), 'apiVersion: modelplane.dev/v1alpha1\nkind: Model\nspec: [');
  // An entry left by an earlier run for a file deleted since: removed on start.
  await store.put({
    id: 'Acme/Gone',
    kind: 'chat',
    pricing: { USD: { input: '1' } },
    created: 0,
    source: `local:${relative(repo, join(dir, 'gone.yaml'))}`,
  });
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  runtime = new LocalRuntime(
    { catalogue: new CatalogueWriter(new CatalogueStore(redis.client())), log },
    { dir, cwd: repo, rescanMs: 200 },
  );
  await runtime.start();
}, 60_000);

afterAll(async () => {
  await runtime?.stop();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('local runtime', () => {
  it('runs the simulator for a simulator Model and catalogues it once it listens', async () => {
    const entry = await waitFor('llama entry with its endpoint', async () => {
      const e = await store.get('meta-llama/llama-3.1-8b-instruct');
      return e && e.endpoints.length > 0 ? e : undefined;
    });
    expect(entry.source).toBe(`local:${relative(repo, join(dir, 'llama.yaml'))}`);
    const url = entry.endpoints[0]!.url;
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toContain('Meta-Llama/Llama-3.1-8B-Instruct');
  });

  it('runs a configured command and catalogues it; comingSoon needs no engine; a broken file is skipped', async () => {
    const tiny = await waitFor('tiny entry with its endpoint', async () => {
      const e = await store.get('acme/tiny-chat');
      return e && e.endpoints.length > 0 ? e : undefined;
    });
    expect(tiny.endpoints).toHaveLength(1);
    const soon = await waitFor('soon entry', () => store.get('acme/soon'));
    expect(soon).toMatchObject({ availability: 'comingSoon', endpoints: [] });
    expect((await store.list()).map((e) => e.id).sort()).toEqual([
      'Acme/Soon',
      'Acme/Tiny-Chat',
      'Meta-Llama/Llama-3.1-8B-Instruct',
    ]);
  });

  it('an edited price reaches the catalogue', async () => {
    write('tiny.yaml', commandModel('0.75'));
    await waitFor(
      'new price',
      async () => (await store.get('acme/tiny-chat'))?.pricing.USD?.['input' as never] === '0.75',
    );
  });

  it('an engine that dies is uncatalogued, restarted, and catalogued again', async () => {
    const file = join(dir, 'tiny.yaml');
    const before = runtime.engine(file)!;
    const pid = before.pid!;
    process.kill(pid, 'SIGKILL');
    await waitFor('restarted', async () => before.restarts > 0 && before.ready && before.pid !== pid);
    await waitFor(
      'catalogued again',
      async () => (await store.get('acme/tiny-chat'))?.endpoints.length === 1,
    );
  });

  it('removing the file removes the entry and stops the engine', async () => {
    const file = join(dir, 'tiny.yaml');
    const engine = runtime.engine(file)!;
    unlinkSync(file);
    await waitFor('entry gone', async () => (await store.get('acme/tiny-chat')) === null);
    await waitFor('port closed', () =>
      fetch(engine.url).then(
        () => false,
        () => true,
      ),
    );
    expect(runtime.engine(file)).toBeUndefined();
  });

  it('catalogues aliases; a later file yields an alias an earlier file holds or another id, and gets it back when freed', async () => {
    const soon = (name: string, id: string, aliases: string[]) =>
      withSpec(chatModel(name), { id, engine: undefined, availability: 'comingSoon', aliases });
    const first = write('alias-a.yaml', soon('alias-a', 'Acme/Alias-A', ['claude-haiku-*', 'shared']));
    const second = write('alias-b.yaml', soon('alias-b', 'Acme/Alias-B', ['Shared', 'acme/soon', 'own']));
    await waitFor('aliases catalogued', async () => {
      const [a, b] = await Promise.all([store.get('acme/alias-a'), store.get('acme/alias-b')]);
      return a?.aliases.join() === 'claude-haiku-*,shared' && b?.aliases.join() === 'own';
    });
    // The status is set just after the catalogue write (runtime.ts sync): looked for until it is.
    const conflict = await waitFor('the alias conflict in the status', async () =>
      [...runtime.conditions()].flat().find((c) => c?.reason === 'AliasConflict'),
    );
    expect(conflict?.message).toContain('Shared (the alias of local:');
    expect(conflict?.message).toContain('acme/soon (the id of local:');
    unlinkSync(first);
    await waitFor(
      'the freed alias',
      async () => (await store.get('acme/alias-b'))?.aliases.join() === 'Shared,own',
    );
    unlinkSync(second);
    await waitFor('entry gone', async () => (await store.get('acme/alias-b')) === null);
  });
});

// The local runtime follows the scaler (issue 32 item 5, what `make dev` shows): a Model at
// minReplicas 0 runs no engine process; a held call published by a proxy's demand board starts
// one and the catalogue gets its endpoint; load grows it to two processes; idle stops them all,
// the entry kept.
describe('the local runtime follows replicas', () => {
  const ID = 'Acme/Sleepy';
  let autoDir: string;
  let scaled: LocalRuntime;
  let board: DemandBoard;
  let publisher: DemandPublisher;
  let file: string;

  beforeAll(async () => {
    autoDir = mkdtempSync(join(tmpdir(), 'mp-models-'));
    const { apiVersion, kind, spec } = withSpec(chatModel('sleepy'), {
      id: ID,
      engine: {
        type: 'custom',
        image: 'unused-locally',
        command: [process.execPath, '-e', tinyServer],
        minReplicas: 0,
        maxReplicas: 2,
        autoscaling: { targetInFlight: 2, scaleDownDelaySeconds: 1, windowSeconds: 1, idleSeconds: 1 },
      },
    });
    file = join(autoDir, 'sleepy.yaml');
    writeFileSync(file, stringify({ apiVersion, kind, metadata: { name: 'sleepy' }, spec }));
    scaled = new LocalRuntime(
      {
        catalogue: new CatalogueWriter(new CatalogueStore(redis.client())),
        log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
        demand: new DemandStore(redis.client()),
        scaleIntervalMs: 200,
      },
      { dir: autoDir, cwd: repo, rescanMs: 200 },
    );
    await scaled.start();
    board = new DemandBoard();
    publisher = new DemandPublisher(new DemandStore(redis.client()), board, {
      intervalMs: 100,
      proxyId: 'p',
    });
    publisher.start();
  }, 60_000);

  afterAll(async () => {
    await publisher?.stop();
    await scaled?.stop();
    rmSync(autoDir, { recursive: true, force: true });
  });

  const endpoints = async (n: number) => {
    const e = await store.get(ID);
    return e && e.endpoints.length === n ? e : undefined;
  };

  it('wakes on a held call, grows with load, and sleeps again when idle', async () => {
    const asleep = await waitFor('catalogued at zero', () => endpoints(0), 30_000);
    expect(asleep.coldStartTimeoutMs).toBe(300_000);
    expect(scaled.engines(file)).toHaveLength(0);

    const held = board.enter(ID, 'held');
    await waitFor('one engine process ready', () => endpoints(1), 30_000);
    held();
    const load = [1, 2, 3].map(() => board.enter(ID, 'inFlight'));
    const two = await waitFor('two engine processes ready', () => endpoints(2), 30_000);
    expect(new Set(two.endpoints.map((e) => e.url)).size).toBe(2);
    expect(scaled.engines(file)).toHaveLength(2);

    for (const leave of load) leave();
    await waitFor('asleep again', () => endpoints(0), 30_000);
    expect(scaled.engines(file)).toHaveLength(0);
    expect((await store.get(ID))?.id).toBe(ID);
  });
});

// Adapter Models in the local runtime (`make dev`): loaded on the base's simulator process, and
// unloaded from it when the adapter's file is removed; a base removed first leaves the adapter
// BaseMissing, and removing the adapter afterwards is uneventful. Real files, a real simulator child
// process and a real Redis.
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { waitUntil } from '../../test/k8s/helpers.ts';
import { loadedAdapters } from '../adapters/apply.ts';
import { chatModel } from '../fixtures.ts';
import type { Model } from '../model/model.ts';
import { CatalogueWriter } from '../runtime/catalogue-writer.ts';
import { LocalRuntime } from './runtime.ts';

const repo = resolve(import.meta.dirname, '..', '..');
let redis: TestRedis;
let store: CatalogueStore;
let dir: string;
let runtime: LocalRuntime;

/** Probes until truthy (a thrown probe counts as not yet), under a bound for a loaded machine. */
const waitFor = <T>(what: string, probe: () => Promise<T | null | undefined | false>) =>
  waitUntil(what, probe, 30_000);

function write(name: string, model: Model): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    stringify({
      apiVersion: model.apiVersion,
      kind: model.kind,
      metadata: { name: model.metadata.name },
      spec: model.spec,
    }),
  );
  return file;
}

const base = chatModel('llama', { engine: { type: 'simulator', lora: { maxLoras: 4 } } });
const adapter = (name: string, id: string) =>
  chatModel(name, { id, engine: undefined, adapter: { base: 'llama', source: `/adapters/${name}` } });

beforeAll(async () => {
  redis = await startRedis();
  store = new CatalogueStore(redis.client());
  dir = mkdtempSync(join(tmpdir(), 'mp-adapters-'));
  write('llama.yaml', base);
  write('tone.yaml', adapter('tone', 'Acme/Tone'));
  runtime = new LocalRuntime(
    {
      catalogue: new CatalogueWriter(new CatalogueStore(redis.client())),
      log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    },
    { dir, cwd: repo, rescanMs: 200 },
  );
  await runtime.start();
}, 60_000);

afterAll(async () => {
  await runtime?.stop();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const baseUrl = () => runtime.engine(join(dir, 'llama.yaml'))!.url;

describe('local runtime adapters', () => {
  it("removing the adapter's file unloads it from the base's engine and removes its entry", async () => {
    await waitFor('the adapter catalogued on the base engine', async () => {
      const e = await store.get('acme/tone');
      return e && e.endpoints.length === 1 ? e : undefined;
    });
    expect(await loadedAdapters(baseUrl())).toEqual(['Acme/Tone']);
    unlinkSync(join(dir, 'tone.yaml'));
    await waitFor('the entry gone', async () => (await store.get('acme/tone')) === null);
    await waitFor(
      'unloaded from the base engine',
      async () => (await loadedAdapters(baseUrl())).length === 0,
    );
    expect(await store.get('meta-llama/llama-3.1-8b-instruct')).toBeTruthy();
  });

  it('a base removed before its adapter: the adapter loses its endpoints, and removing it then goes quietly', async () => {
    write('tone-two.yaml', adapter('tone-two', 'Acme/Tone-Two'));
    await waitFor('the second adapter loaded', async () => {
      const e = await store.get('acme/tone-two');
      return e && e.endpoints.length === 1 ? e : undefined;
    });
    unlinkSync(join(dir, 'llama.yaml'));
    await waitFor(
      'the base entry gone',
      async () => (await store.get('meta-llama/llama-3.1-8b-instruct')) === null,
    );
    await waitFor(
      'the adapter without endpoints',
      async () => (await store.get('acme/tone-two'))?.endpoints.length === 0,
    );
    unlinkSync(join(dir, 'tone-two.yaml'));
    await waitFor('the adapter entry gone', async () => (await store.get('acme/tone-two')) === null);
    // Still running: a new base file is served again.
    write('llama.yaml', base);
    await waitFor('the base catalogued again', async () => {
      const e = await store.get('meta-llama/llama-3.1-8b-instruct');
      return e && e.endpoints.length === 1 ? e : undefined;
    });
  });
});

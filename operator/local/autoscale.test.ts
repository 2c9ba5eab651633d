// The local runtime follows the scaler (issue 32 item 5, what `make dev` shows): a Model at
// minReplicas 0 runs no engine process; a held call published by a proxy's demand board starts
// one and the catalogue gets its endpoint; load grows it to two processes; idle stops them all,
// the entry kept. Real files, real child processes, a real Redis.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { DemandStore } from '../../core/demand.ts';
import { DemandBoard } from '../../proxy/demand/board.ts';
import { DemandPublisher } from '../../proxy/demand/publisher.ts';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { CatalogueWriter } from '../catalogue-writer.ts';
import { chatModel, withSpec } from '../fixtures.ts';
import { LocalRuntime } from './runtime.ts';

const repo = resolve(import.meta.dirname, '..', '..');
const ID = 'Acme/Sleepy';
const tinyServer = `require('node:http').createServer((q, s) => s.end('{"data":[]}')).listen(Number(process.env.PORT), '127.0.0.1')`;
let redis: TestRedis;
let store: CatalogueStore;
let dir: string;
let runtime: LocalRuntime;
let board: DemandBoard;
let publisher: DemandPublisher;
let file: string;

const waitFor = async <T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000) => {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

beforeAll(async () => {
  redis = await startRedis();
  store = new CatalogueStore(redis.client());
  dir = mkdtempSync(join(tmpdir(), 'mp-models-'));
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
  file = join(dir, 'sleepy.yaml');
  writeFileSync(file, stringify({ apiVersion, kind, metadata: { name: 'sleepy' }, spec }));
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  runtime = new LocalRuntime(
    {
      catalogue: new CatalogueWriter(new CatalogueStore(redis.client())),
      log,
      demand: new DemandStore(redis.client()),
      scaleIntervalMs: 200,
    },
    { dir, cwd: repo, rescanMs: 200 },
  );
  await runtime.start();
  board = new DemandBoard();
  publisher = new DemandPublisher(new DemandStore(redis.client()), board, { intervalMs: 100, proxyId: 'p' });
  publisher.start();
}, 60_000);

afterAll(async () => {
  await publisher?.stop();
  await runtime?.stop();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const endpoints = async (n: number) => {
  const e = await store.get(ID);
  return e && e.endpoints.length === n ? e : undefined;
};

describe('the local runtime follows replicas', () => {
  it('wakes on a held call, grows with load, and sleeps again when idle', async () => {
    const asleep = await waitFor('catalogued at zero', () => endpoints(0));
    expect(asleep.coldStartTimeoutMs).toBe(300_000);
    expect(runtime.engines(file)).toHaveLength(0);

    const held = board.enter(ID, 'held');
    await waitFor('one engine process ready', () => endpoints(1));
    held();
    const load = [1, 2, 3].map(() => board.enter(ID, 'inFlight'));
    const two = await waitFor('two engine processes ready', () => endpoints(2));
    expect(new Set(two.endpoints.map((e) => e.url)).size).toBe(2);
    expect(runtime.engines(file)).toHaveLength(2);

    for (const leave of load) leave();
    await waitFor('asleep again', () => endpoints(0));
    expect(runtime.engines(file)).toHaveLength(0);
    expect((await store.get(ID))?.id).toBe(ID);
  });
});

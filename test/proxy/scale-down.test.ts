// A scale-down during live streams cuts none of them (issue 32 item 3), with the local runtime's
// real engine processes (one simulator per replica, started with --shutdown-timeout as in a pod)
// behind a real proxy: 200 streams run on two replicas, the Model goes to one, and the runtime
// removes the least-loaded process — out of the catalogue first, SIGTERM once the proxies have
// the change, the engine finishing its streams before it exits. Every stream ends whole, is
// charged exactly once for what it delivered, and the ledger check is clean. Then a rollout (issue
// 31 item 3): the engine changes under 100 streams; the new processes start beside the old, which
// leave the catalogue only once the new are all ready and then drain (operator/local/rollout.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CatalogueStore } from '../../core/catalogue/store.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { callsInEngine } from '../../operator/autoscale/engine-load.ts';
import { chatModel, withSpec } from '../../operator/fixtures.ts';
import { LocalRuntime } from '../../operator/local/runtime.ts';
import { CatalogueWriter } from '../../operator/runtime/catalogue-writer.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type Harness, startHarness } from './harness.ts';

const repo = resolve(import.meta.dirname, '..', '..');
const ID = 'Acme/Draining-Chat';
const STREAMS = 200;
const TOKENS = 120;
const ROLLOUT_STREAMS = 100;
/** Calls made while a rollout runs, short and not streamed. */
const SHORT_CALLS = 20;
const SHORT_TOKENS = 3;

let h: Harness;
let runtime: LocalRuntime;
let dir: string;
let file: string;

function writeModel(replicas: number, extra: string[] = []): void {
  const { apiVersion, kind, spec } = withSpec(chatModel('draining'), {
    id: ID,
    // 25 ms between tokens: each stream lasts about 3 s, long enough to span the scale-down.
    engine: {
      type: 'simulator',
      replicas,
      drainSeconds: 60,
      args: ['--itl-ms', '25', '--ttft-ms', '20', ...extra],
    },
    pricing: { USD: { input: '1', output: '2' } },
  });
  writeFileSync(file, stringify({ apiVersion, kind, metadata: { name: 'draining' }, spec }));
}

beforeAll(async () => {
  h = await startHarness();
  dir = mkdtempSync(join(tmpdir(), 'mp-models-'));
  file = join(dir, 'draining.yaml');
  writeModel(2);
  runtime = new LocalRuntime(
    {
      catalogue: new CatalogueWriter(new CatalogueStore(h.redis.client())),
      log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    },
    { dir, cwd: repo, rescanMs: 200, propagationMs: 1_000 },
  );
  await runtime.start();
}, 60_000);

afterAll(async () => {
  await runtime?.stop();
  await h?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const endpoints = async () => (await h.catalogue.get(ID))?.endpoints.length ?? 0;
async function until(what: string, probe: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Delivered {
  finish: string | null | undefined;
  outputTokens: number | undefined;
}

/** `n` streams of their own prompts; `started()` counts those whose first chunk arrived. */
function streams(n: number, tag: string) {
  let started = 0;
  const client = h.client();
  const all = Array.from({ length: n }, async (_, i): Promise<Delivered> => {
    const s = await client.chat.completions.create({
      model: ID,
      // Prompts of their own: no shared prefix draws every stream to one engine (routing).
      messages: [{ role: 'user', content: `${tag} ${i} tell me a long story` }],
      max_tokens: TOKENS,
      stream: true,
      stream_options: { include_usage: true },
    });
    let chunks = 0;
    let finish: string | null | undefined;
    let usage: { completion_tokens: number } | undefined;
    for await (const c of s) {
      if (chunks++ === 0) started++;
      finish = c.choices[0]?.finish_reason ?? finish;
      if (c.usage) usage = c.usage;
    }
    return { finish, outputTokens: usage?.completion_tokens };
  });
  return { settled: Promise.allSettled(all), started: () => started };
}

/** Every stream ended whole: a finish reason (the simulator may stop before max_tokens) and its usage. */
function expectWhole(results: PromiseSettledResult<Delivered>[]): Delivered[] {
  const failures = results.filter((r) => r.status === 'rejected').map((r) => String(r.reason));
  expect(failures).toEqual([]);
  const whole = results.map((r) => (r.status === 'fulfilled' ? r.value : { finish: null, outputTokens: 0 }));
  for (const r of whole) {
    expect(['stop', 'length']).toContain(r.finish);
    expect(r.outputTokens).toBeGreaterThan(0);
  }
  return whole;
}

/**
 * The charges recorded after the first `seen`: one per call, each for the output its call
 * delivered (`delivered`: the streams' and any other calls' output tokens); then the ledger check.
 */
async function expectChargedOnce(seen: number, delivered: (number | undefined)[]): Promise<number> {
  await h.quiesce();
  const charges = (await usageRecords(h.redis.client(), h.accountId, { count: 10_000 })).filter(
    (u) => u.type === 'charge',
  );
  expect(charges).toHaveLength(seen + delivered.length);
  expect(new Set(charges.map((c) => c.opId)).size).toBe(charges.length);
  // Newest first: this test's charges lead the list.
  const sorted = (xs: (number | null | undefined)[]) => xs.map(Number).sort((a, b) => a - b);
  expect(sorted(charges.slice(0, delivered.length).map((c) => c.outputTokens))).toEqual(sorted(delivered));
  await expectLedgerClean(h.redis.client(), [h.accountId]);
  return charges.length;
}

describe('live streams while the engines change', () => {
  let charged = 0;

  it(`a scale-down cuts none of ${STREAMS} streams; each is billed once, the ledger clean`, async () => {
    await until('two engine processes catalogued', async () => (await endpoints()) === 2);
    const before = runtime.engines(file).map((p) => p.pid);
    expect(before).toHaveLength(2);

    const run = streams(STREAMS, 'down');
    await until('every stream under way', () => run.started() === STREAMS);

    // Both engines carry streams, so whichever goes (the lighter, by then) has streams to finish;
    // which one is the lighter is removal.test.ts's (here the two are within noise of each other).
    const loads = await Promise.all(runtime.engines(file).map((p) => callsInEngine(p.url)));
    for (const l of loads) expect(l).toBeGreaterThan(0);

    // Down to one replica while all 200 stream: the file's replicas, through the same fit as the scaler's.
    writeModel(1);
    await until('one engine left in the catalogue', async () => (await endpoints()) === 1);
    const kept = runtime.engines(file).map((p) => p.pid);
    expect(kept).toHaveLength(1);
    const removed = before.find((pid) => !kept.includes(pid))!;
    // The removed engine still runs (draining) while its streams go on.
    expect(run.started()).toBe(STREAMS);
    expect(isAlive(removed)).toBe(true);

    const whole = expectWhole(await run.settled);
    // Its streams done, the removed engine exits.
    await until('the removed engine exited', () => !isAlive(removed), 30_000);
    charged = await expectChargedOnce(
      charged,
      whole.map((r) => r.outputTokens),
    );
  }, 120_000);

  it(`a rollout (a new engine) cuts none of ${ROLLOUT_STREAMS} streams, serves the calls made during it, and never empties the catalogue`, async () => {
    writeModel(2);
    await until('two engine processes catalogued', async () => (await endpoints()) === 2);
    const before = runtime.engines(file).map((p) => p.pid);
    const run = streams(ROLLOUT_STREAMS, 'rollout');
    await until('every stream under way', () => run.started() === ROLLOUT_STREAMS);

    // A changed engine (its arguments): new processes on other ports, as a rollout makes new pods.
    writeModel(2, ['--ttft-ms', '21']);
    // While it rolls: calls made now are served, and the catalogue never lacks an endpoint.
    let fewest = Number.POSITIVE_INFINITY;
    const client = h.client();
    const during: Promise<OpenAI.ChatCompletion>[] = [];
    await until(
      'the new engine processes alone in the catalogue',
      async () => {
        const entry = await h.catalogue.get(ID);
        fewest = Math.min(fewest, entry?.endpoints.length ?? 0);
        if (during.length < SHORT_CALLS) {
          during.push(
            client.chat.completions.create({
              model: ID,
              messages: [{ role: 'user', content: `during ${during.length}` }],
              max_tokens: SHORT_TOKENS,
            }),
          );
        }
        const now = runtime.engines(file);
        const urls = new Set(now.map((p) => p.url));
        return (
          now.length === 2 &&
          !now.some((p) => before.includes(p.pid)) &&
          entry?.endpoints.length === 2 &&
          entry.endpoints.every((e) => urls.has(e.url))
        );
      },
      60_000,
    );
    expect(fewest).toBeGreaterThanOrEqual(1);
    // The old engines drain: alive while their streams go on, gone once they end.
    const whole = expectWhole(await run.settled);
    const answers = await Promise.allSettled(during);
    expect(answers.filter((a) => a.status === 'rejected').map((a) => String(a.reason))).toEqual([]);
    const shortOutputs = answers.map((a) =>
      a.status === 'fulfilled' ? a.value.usage?.completion_tokens : 0,
    );
    for (const pid of before) await until(`old engine ${pid} exited`, () => !isAlive(pid), 30_000);
    charged = await expectChargedOnce(charged, [...whole.map((r) => r.outputTokens), ...shortOutputs]);
  }, 120_000);
});

function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

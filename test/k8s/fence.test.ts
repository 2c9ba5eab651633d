// One operator leader, fenced (issue 41), on a real kube-apiserver + etcd, with live traffic through
// a real proxy reading the catalogue the operators write. Timings are scaled down with client-go's
// ratios kept (helpers.ts TEST_LEASE): a 2 s lease, 1.33 s renew deadline, 0.5 s request timeout.
// - A leader whose API connection hangs (a relay that stops forwarding without closing) steps down
//   within the renew deadline while the other replica takes over; a stale write after that is
//   refused by Redis.
// - A stall of the API server for everyone (twice the lease, as 30 s is to 15 s) hands nothing over.
// - An operator started while the API server is down does not campaign, reconcile or write until
//   every cache has listed; its informers back off while the API server is gone (counted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FencedCatalogue, isStaleTerm } from '../../core/catalogue/fence.ts';
import type { CatalogueEntry, CatalogueEntryInput } from '../../core/catalogue/index.ts';
import { chatModel, withSpec } from '../../operator/fixtures.ts';
import { NotLeadingError } from '../../operator/runtime/catalogue-writer.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type Harness, startHarness } from '../proxy/harness.ts';
import { startCluster, type TestCluster } from './cluster.ts';
import {
  apis,
  createModel,
  fencedWriter,
  modelRef,
  type OperatorReplica,
  readySlice,
  startOperator,
  waitUntil,
} from './helpers.ts';
import { type ApiRelay, startApiRelay } from './relay.ts';

const RENEW_DEADLINE_MS = 1_333;
const EXTERNAL = 'Acme/Fenced-Chat';
const GPU = 'Acme/Fenced-GPU';

let cluster: TestCluster;
let h: Harness;
const relays: ApiRelay[] = [];
const replicas: OperatorReplica[] = [];

beforeAll(async () => {
  [cluster, h] = await Promise.all([startCluster(), startHarness()]);
}, 900_000);
afterAll(async () => {
  for (const r of replicas) await r.stop().catch(() => undefined);
  for (const r of relays) await r.close();
  await Promise.all([cluster?.stop(), h?.stop()]);
});

async function relay(): Promise<ApiRelay> {
  const r = await startApiRelay(cluster);
  relays.push(r);
  return r;
}

async function operator(identity: string, options: Parameters<typeof startOperator>[3] = {}) {
  const replica = await startOperator(cluster, h.redis.client(), identity, options);
  replicas.push(replica);
  return replica;
}

const entry = (id: string) => h.catalogue.get(id);
const inputPrice = (e: CatalogueEntry | null) => (e?.pricing.USD as { input?: string } | undefined)?.input;
const leaderGauge = async (r: OperatorReplica) => (await r.metrics.leader.get()).values[0]?.value;

async function setPrice(name: string, input: string): Promise<void> {
  await apis(cluster).custom.patchNamespacedCustomObject({
    ...modelRef(name),
    body: [{ op: 'replace', path: '/spec/pricing/USD/input', value: input }],
  });
}

/** Calls through the proxy on `model` from 4 clients until stopped; every failure is kept. */
function liveTraffic(model: string) {
  let running = true;
  const failures: string[] = [];
  let ok = 0;
  const workers = Array.from({ length: 4 }, async () => {
    const client = h.client();
    while (running) {
      try {
        await client.chat.completions.create({
          model,
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 4,
        });
        ok++;
      } catch (err) {
        failures.push(String(err));
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(workers);
      return { ok, failures };
    },
  };
}

/** Samples an entry's input price every 20 ms: the catalogue must never go back to an old price. */
function priceHistory(id: string) {
  const seen: string[] = [];
  const timer = setInterval(() => {
    void entry(id).then((e) => {
      const p = inputPrice(e) ?? 'missing';
      if (seen.at(-1) !== p) seen.push(p);
    });
  }, 20);
  return {
    stop() {
      clearInterval(timer);
      return seen;
    },
  };
}

describe('one operator leader, fenced', () => {
  let a: OperatorReplica;
  let b: OperatorReplica;
  let aRelay: ApiRelay;
  let bRelay: ApiRelay;

  it('a leader whose API connection hangs stops writing within the renew deadline; the other takes over; a stale write is refused by Redis', async () => {
    aRelay = await relay();
    bRelay = await relay();
    // A short resync: a stale leader would write its old cache within a few hundred ms.
    a = await operator('op-a', { kubeConfig: aRelay.kubeConfig, resyncMs: 300 });
    await waitUntil('op-a to lead', async () => a.runtime.leader.isLeader);
    b = await operator('op-b', { kubeConfig: bRelay.kubeConfig, resyncMs: 300 });
    await createModel(
      cluster,
      withSpec(chatModel('fenced-ext'), {
        id: EXTERNAL,
        engine: undefined,
        external: { url: h.sims[0]!.url },
      }),
    );
    const first = await waitUntil('external entry', async () => {
      const e = await entry(EXTERNAL);
      return inputPrice(e) === '0.15' ? e : undefined;
    });
    expect(first.endpoints).toEqual([{ url: h.sims[0]!.url }]);
    const traffic = liveTraffic(EXTERNAL);
    const history = priceHistory(EXTERNAL);
    const staleTerm = a.catalogue.currentTerm!;
    expect(staleTerm).toBeGreaterThan(0);

    // Never two leaders at once, sampled every 10 ms through the whole handover.
    let overlap = false;
    const sampler = setInterval(() => {
      overlap ||= a.runtime.leader.isLeader && b.runtime.leader.isLeader;
    }, 10);
    aRelay.hang();
    const hungAt = Date.now();
    await waitUntil('op-a to step down', async () => !a.runtime.leader.isLeader, 5_000);
    const steppedDownAfter = Date.now() - hungAt;
    // The deadline runs from the last renewal that succeeded (before the hang), by a timer, while
    // op-a's renewal is still in flight (it times out after 0.5 s and is retried, hanging again).
    expect(steppedDownAfter).toBeLessThanOrEqual(RENEW_DEADLINE_MS + 300);
    expect(await leaderGauge(a)).toBe(0);
    expect(a.catalogue.currentTerm).toBeNull();

    await waitUntil('op-b to lead', async () => b.runtime.leader.isLeader, 10_000);
    clearInterval(sampler);
    expect(overlap).toBe(false);
    // op-b took over only once op-a's last renewal (at most a retry period before the hang) was a
    // whole lease old by op-b's clock.
    expect(Date.now() - hungAt).toBeGreaterThanOrEqual(2_000 - 200);
    await waitUntil('op-b fenced the catalogue', async () =>
      (await new FencedCatalogue(h.redis.client()).fence()) > staleTerm ? true : undefined,
    );

    // Changes made under the new leader: a price, and a new Model.
    await setPrice('fenced-ext', '0.25');
    await createModel(
      cluster,
      withSpec(chatModel('fenced-new'), {
        id: 'Acme/Fenced-New',
        engine: undefined,
        external: { url: h.sims[1]!.url },
      }),
    );
    await waitUntil('new price', async () => inputPrice(await entry(EXTERNAL)) === '0.25');
    await waitUntil('new Model catalogued', () => entry('Acme/Fenced-New'));
    // Several of op-a's resync periods pass with its stale cache: it writes nothing.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(inputPrice(await entry(EXTERNAL))).toBe('0.25');
    expect(await entry('Acme/Fenced-New')).not.toBeNull();

    // The stale write, forced: op-a's own writer refuses at once (it knows it stepped down)…
    const stale: CatalogueEntryInput = { ...first, pricing: { USD: { input: '0.15' } } };
    await expect(a.catalogue.put(stale)).rejects.toBeInstanceOf(NotLeadingError);
    // …and a writer that still believes in op-a's term — a leader that does not know it was
    // deposed — is refused by Redis, for a put, a removal and the removal of "vanished" entries.
    const deposed = fencedWriter(h.redis.client());
    expect(await deposed.lead(staleTerm).catch((e: unknown) => e)).toSatisfy(isStaleTerm);
    expect(deposed.currentTerm).toBe(staleTerm);
    expect(await deposed.put(stale).catch((e: unknown) => e)).toSatisfy(isStaleTerm);
    expect(
      await deposed.remove('Acme/Fenced-New', 'Model/default/fenced-new').catch((e: unknown) => e),
    ).toSatisfy(isStaleTerm);
    expect(await deposed.removeOrphans('Model/', () => false).catch((e: unknown) => e)).toSatisfy(
      isStaleTerm,
    );
    expect(inputPrice(await entry(EXTERNAL))).toBe('0.25');
    expect(await entry('Acme/Fenced-New')).not.toBeNull();

    // The connection comes back: op-a follows, op-b keeps leading.
    aRelay.resume();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(a.runtime.leader.isLeader).toBe(false);
    expect(b.runtime.leader.isLeader).toBe(true);
    expect(inputPrice(await entry(EXTERNAL))).toBe('0.25');

    const { ok, failures } = await traffic.stop();
    expect(history.stop()).toEqual(['0.15', '0.25']);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(0);
  }, 60_000);

  it('a stall of the API server for everyone (twice the lease) hands nothing over', async () => {
    // op-b leads; both reach the API server only through their relays, which both go silent.
    const lease = () =>
      apis(cluster).coordination.readNamespacedLease({ name: 'modelplane-operator', namespace: 'default' });
    const before = await lease();
    expect(before.spec?.holderIdentity).toBe('op-b');
    let aLed = false;
    const watch = setInterval(() => {
      aLed ||= a.runtime.leader.isLeader;
    }, 10);
    const traffic = liveTraffic(EXTERNAL);
    const history = priceHistory(EXTERNAL);
    try {
      aRelay.hang();
      bRelay.hang();
      await new Promise((r) => setTimeout(r, 4_000));
      // No renewal can succeed: the leader steps down on its deadline (it cannot tell a stall
      // from being cut off alone) — and nobody else could take the Lease meanwhile.
      expect(b.runtime.leader.isLeader).toBe(false);
      aRelay.resume();
      bRelay.resume();
      // The holder takes its own Lease back at once; the follower restarts its count of silence
      // after the gap, so it does not see an expired Lease and race for it.
      await waitUntil('op-b to lead again', async () => b.runtime.leader.isLeader, 3_000);
      await new Promise((r) => setTimeout(r, 2_500));
      expect(aLed).toBe(false);
      expect(b.runtime.leader.isLeader).toBe(true);
      const after = await lease();
      expect(after.spec?.holderIdentity).toBe('op-b');
      // It is a new term all the same (it stepped down), and the catalogue's fence follows it.
      expect(after.spec?.leaseTransitions).toBe((before.spec?.leaseTransitions ?? 0) + 1);
      expect(await new FencedCatalogue(h.redis.client()).fence()).toBe(after.spec?.leaseTransitions);
      await setPrice('fenced-ext', '0.35');
      await waitUntil('price after the stall', async () => inputPrice(await entry(EXTERNAL)) === '0.35');
    } finally {
      clearInterval(watch);
      aRelay.resume();
      bRelay.resume();
    }
    const { failures } = await traffic.stop();
    expect(failures).toEqual([]);
    expect(history.stop()).toEqual(['0.25', '0.35']);
  }, 60_000);

  it('an operator started while the API server is down campaigns and writes only once every cache has listed; its informers back off meanwhile', async () => {
    // A GPU-style Model (Deployment + Service + a ready EndpointSlice), catalogued by op-b.
    await createModel(cluster, withSpec(chatModel('fenced-gpu'), { id: GPU }));
    await waitUntil('Service', () =>
      apis(cluster).core.readNamespacedService({ name: 'model-fenced-gpu', namespace: 'default' }),
    );
    await apis(cluster).discovery.createNamespacedEndpointSlice({
      namespace: 'default',
      body: readySlice('model-fenced-gpu', h.sims[0]!.port),
    });
    await waitUntil(
      'GPU entry with its endpoint',
      async () => ((await entry(GPU))?.endpoints.length ?? 0) > 0,
    );
    await a.stop();
    await b.stop();
    // A change no operator has written yet: the next leader must write it, with the endpoints.
    await setPrice('fenced-gpu', '0.45');
    const traffic = liveTraffic(GPU);

    // Every catalogue put the new operator makes, as it makes it.
    const writer = fencedWriter(h.redis.client());
    const puts: CatalogueEntryInput[] = [];
    const put = writer.put.bind(writer);
    writer.put = (input) => {
      puts.push(input);
      return put(input);
    };
    let c: OperatorReplica | undefined;
    let restartsWhileDown = 0;
    let downMs = 0;
    await cluster.restartApiServer(async () => {
      const downAt = Date.now();
      c = await operator('op-c', { catalogue: writer });
      await new Promise((r) => setTimeout(r, 5_000));
      expect(c.runtime.healthy().ok).toBe(false);
      // Not even a Lease read: the election has not begun.
      expect(c.runtime.leader.attempts).toBe(0);
      expect(c.runtime.leader.isLeader).toBe(false);
      expect(puts).toEqual([]);
      restartsWhileDown = c.runtime.healthy().detail.restarts;
      downMs = Date.now() - downAt;
    });
    // Four informers restarting every 0.5 s would have made 40 restarts in 5 s; backing off
    // (0.5, 1, 2, 4 s…) each makes at most ⌈log2(5 s / 0.5 s)⌉ + 1.
    const perInformer = Math.ceil(Math.log2(downMs / 500)) + 1;
    expect(restartsWhileDown).toBeGreaterThan(0);
    expect(restartsWhileDown).toBeLessThanOrEqual(4 * perInformer);

    await waitUntil('op-c to lead', async () => c!.runtime.leader.isLeader, 60_000);
    await waitUntil('the new price', async () => inputPrice(await entry(GPU)) === '0.45', 10_000);
    const gpuPuts = puts.filter((p) => p.id === GPU);
    expect(gpuPuts.length).toBeGreaterThan(0);
    // Never catalogued with no endpoint (which would answer calls with 500 for a moment).
    for (const p of gpuPuts) expect(p.endpoints?.length).toBeGreaterThan(0);

    // Warm informers (they know a resourceVersion, so a restart skips the list and fails at the
    // watch) back off too: they used to retry every 0.5 s for as long as the API server was gone.
    const before = c!.runtime.healthy().detail.restarts;
    let warmRestarts = 0;
    let warmDownMs = 0;
    await cluster.restartApiServer(async () => {
      const downAt = Date.now();
      await new Promise((r) => setTimeout(r, 5_000));
      warmRestarts = c!.runtime.healthy().detail.restarts - before;
      warmDownMs = Date.now() - downAt;
    });
    expect(warmRestarts).toBeGreaterThan(0);
    expect(warmRestarts).toBeLessThanOrEqual(4 * (Math.ceil(Math.log2(warmDownMs / 500)) + 1));
    await setPrice('fenced-gpu', '0.55');
    await waitUntil(
      'a change after the restart',
      async () => inputPrice(await entry(GPU)) === '0.55',
      30_000,
    );

    const { ok, failures } = await traffic.stop();
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(0);
    await h.quiesce();
    await expectLedgerClean(h.redis.client(), [h.accountId]);
  }, 180_000);
});

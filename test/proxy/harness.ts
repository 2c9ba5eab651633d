// The real thing on loopback for end-to-end tests: a redis-server, two simulator engines, the
// proxy app built by buildProxyApp, a seeded catalogue, and an account with a key and credit.
// Tests talk to it with the official `openai` SDK.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Metering } from '../../core/billing/index.ts';
import { type CatalogueEntryInput, CatalogueSnapshot, CatalogueStore } from '../../core/catalogue/index.ts';
import { type Config, loadConfig } from '../../core/config/index.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import type { UsageEntry } from '../../core/usage/usage.ts';
import { type Simulator, startSimulator } from '../../engines/simulator/server.ts';
import { buildProxyApp, type ProxyApp } from '../../proxy/app.ts';
import { startRedis, type TestRedis, type TestRedisOptions } from '../helpers/redis.ts';
import { registerSecrets, runLogStream } from '../helpers/run-log.ts';

export const CHAT_MODEL = 'Org/Chat-Model';
export const EMBED_MODEL = 'Embed/Small-v1';
export const ALIAS_MODEL = 'Org/Served-Alias';

export interface Harness {
  redis: TestRedis;
  sims: Simulator[];
  proxy: ProxyApp;
  baseURL: string;
  /** The proxy's /metrics, on its own port (not the API's). */
  metricsURL: string;
  config: Config;
  accounts: Accounts;
  keys: ApiKeys;
  metering: Metering;
  catalogue: CatalogueStore;
  snapshot: CatalogueSnapshot;
  /** A funded USD account and its key. */
  accountId: string;
  keyId: string;
  secret: string;
  client(secret?: string, opts?: { maxRetries?: number }): OpenAI;
  /** A new funded account (country US) with one key. */
  newAccount(opts?: {
    country?: string | null;
    credit?: string;
  }): Promise<{ accountId: string; keyId: string; secret: string }>;
  /**
   * Lands every queued settlement and gives back every lease's unused money, so balances and
   * `held` read afterwards are exact (leases otherwise stay held until PROXY_LEASE_IDLE_MS).
   */
  quiesce(): Promise<void>;
  /** Lands every queued settlement; the leases stay held. */
  settleQueued(): Promise<void>;
  /** Waits until every hold of the account is settled or released (quiescing the leases). */
  settled(accountId: string): Promise<{ balance: number; held: number }>;
  stop(): Promise<void>;
}

/** An image model priced per image on `endpoints` (the engines a harness passes to `entries`). */
export const imageModel = (
  id: string,
  endpoints: { url: string }[],
  o: { perImage?: string; edit?: boolean } = {},
): CatalogueEntryInput => ({
  id,
  kind: 'image',
  pricing: { USD: { perImage: o.perImage ?? '0.04' } },
  ...(o.edit ? { capabilities: { edit: true } } : {}),
  endpoints,
  created: 1_700_000_000,
});

/** A video model priced per second on `endpoints`; `imageToVideo` takes an input_reference. */
export const videoModel = (
  id: string,
  endpoints: { url: string }[],
  o: { perSecond?: string; imageToVideo?: boolean } = {},
): CatalogueEntryInput => ({
  id,
  kind: 'video',
  pricing: { USD: { perSecond: o.perSecond ?? '0.1' } },
  ...(o.imageToVideo ? { capabilities: { imageToVideo: true } } : {}),
  endpoints,
  created: 1_700_000_000,
});

/** A chat model at 1 / 2 USD per million tokens on `endpoints`, with the capabilities given. */
export const chatModel = (
  id: string,
  endpoints: { url: string }[],
  capabilities?: CatalogueEntryInput['capabilities'],
): CatalogueEntryInput => ({
  id,
  kind: 'chat',
  pricing: { USD: { input: '1', output: '2' } },
  ...(capabilities ? { capabilities } : {}),
  endpoints,
  created: 1_700_000_000,
});

/** A fresh data directory for one proxy app (its settlement journal). */
export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'mp-proxy-'));
}

export async function startHarness(
  env: Record<string, string> = {},
  opts: {
    redis?: TestRedisOptions;
    /** Every log line of the proxy (at trace level) goes here; by default info and up go to the run log. */
    logStream?: NodeJS.WritableStream;
    /** More catalogue entries, served by the same two simulators. */
    entries?: (endpoints: { url: string }[]) => CatalogueEntryInput[];
    /** Other engines for some entries (by id): a real llama.cpp server (../llamacpp/server.ts). */
    engines?: Record<string, { url: string }[]>;
  } = {},
): Promise<Harness> {
  const redis = await startRedis(opts.redis);
  const sims = await Promise.all([
    startSimulator({ ttftMs: 5, itlMs: 1, models: [CHAT_MODEL] }),
    startSimulator({ ttftMs: 5, itlMs: 1, models: [CHAT_MODEL] }),
  ]);
  const config = loadConfig({
    REDIS_URL: redis.url,
    PROXY_DATA_DIR: tempDataDir(),
    MEDIA_DIR: tempDataDir(),
    MODELPLANE_KEK: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'silent',
    PROXY_CORS_ORIGINS: 'http://console.test',
    ...env,
  });
  registerSecrets(config.MODELPLANE_KEK);
  const r = redis.client();
  const catalogue = new CatalogueStore(r);
  const created = 1_700_000_000;
  const endpoints = sims.map((s) => ({ url: s.url }));
  const entries: CatalogueEntryInput[] = [
    {
      id: CHAT_MODEL,
      kind: 'chat',
      pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' }, EUR: { input: '1', output: '2' } },
      region: 'eu-west',
      tags: ['chat', 'tools'],
      capabilities: { tools: true, vision: false, edit: false, imageToVideo: false },
      maxOutputTokens: 256,
      endpoints,
      created,
    },
    {
      // The engines know this model by another name (the operator's servedName).
      id: ALIAS_MODEL,
      servedName: CHAT_MODEL,
      kind: 'chat',
      pricing: { USD: { input: '1', output: '2' } },
      endpoints,
      created,
    },
    { id: EMBED_MODEL, kind: 'embedding', pricing: { USD: { input: '0.1' } }, endpoints, created },
    {
      id: 'Priced/EUR-Only',
      kind: 'chat',
      pricing: { EUR: { input: '1', output: '1' } },
      endpoints,
      created,
    },
    {
      id: 'Invite/Only',
      kind: 'chat',
      availability: 'inviteOnly',
      pricing: { USD: { input: '1', output: '1' } },
      endpoints,
      created,
    },
    {
      id: 'Soon/Model',
      kind: 'chat',
      availability: 'comingSoon',
      pricing: { USD: { input: '1', output: '1' } },
      endpoints,
      created,
    },
  ];
  entries.push(...(opts.entries?.(endpoints) ?? []));
  for (const e of entries) await catalogue.put({ ...e, endpoints: opts.engines?.[e.id] ?? e.endpoints });
  const snapshot = new CatalogueSnapshot(r, { subscriber: redis.client(), refreshMs: 60_000 });
  await snapshot.start();
  const proxy = await buildProxyApp({
    config,
    redis: r,
    subscriber: redis.client(),
    catalogue: snapshot,
    // A test's own stream gets every line (trace); otherwise the run's log folder gets info and
    // up, which the final credential scan reads (test/helpers/run-log.ts).
    ...(opts.logStream
      ? { logger: { level: 'trace' }, logStream: opts.logStream }
      : { logger: { level: 'info' }, logStream: runLogStream('proxy') }),
  });
  await proxy.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = proxy.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const baseURL = `http://127.0.0.1:${port}/v1`;
  const metricsURL = `http://127.0.0.1:${await proxy.metricsServer.listen('127.0.0.1', 0)}/metrics`;

  const accounts = new Accounts(r);
  const keys = new ApiKeys(r, { brand: config.MODELPLANE_BRAND, kek: config.kek });
  const metering = new Metering(r);
  const newAccount: Harness['newAccount'] = async (opts = {}) => {
    const account = await accounts.create({
      name: 'test',
      country: opts.country === undefined ? 'US' : opts.country,
    });
    const amount = parseDecimalToNano(opts.credit ?? '100');
    if (amount > 0) await metering.topUp({ accountId: account.id, topUpId: `t-${account.id}`, amount });
    const { key, secret } = await keys.create(account.id, { name: 'test key' });
    registerSecrets(secret);
    return { accountId: account.id, keyId: key.id, secret };
  };
  const main = await newAccount();
  return {
    redis,
    sims,
    proxy,
    baseURL,
    metricsURL,
    config,
    accounts,
    keys,
    metering,
    catalogue,
    snapshot,
    ...main,
    newAccount,
    client: (secret = main.secret, opts = {}) =>
      new OpenAI({ apiKey: secret, baseURL, maxRetries: opts.maxRetries ?? 0 }),
    quiesce: () => proxy.ctx.billing.quiesce(),
    settleQueued: () => proxy.ctx.billing.settleQueued(),
    async settled(accountId) {
      for (let i = 0; i < 200; i++) {
        await proxy.ctx.billing.quiesce();
        const b = await metering.balance(accountId);
        if (b.held === 0) return b;
        await new Promise((res) => setTimeout(res, 25));
      }
      throw new Error('holds never settled');
    },
    async stop() {
      // Sockets a client left half-used (streams it cut) would hold close() for the keep-alive timeout.
      const closing = proxy.app.close();
      proxy.app.server.closeAllConnections();
      await closing;
      rmSync(config.PROXY_DATA_DIR, { recursive: true, force: true });
      rmSync(config.MEDIA_DIR, { recursive: true, force: true });
      snapshot.stop();
      await Promise.all(sims.map((s) => s.close()));
      await redis.stop();
    },
  };
}

/**
 * Another proxy replica on the harness's Redis and catalogue (its own process state: key cache,
 * leases, balances), listening on loopback; `baseURL` is its /v1.
 */
export async function secondReplica(
  h: Harness,
  env: Partial<Config> = {},
): Promise<{ proxy: ProxyApp; baseURL: string; stop(): Promise<void> }> {
  const proxy = await buildProxyApp({
    config: { ...h.config, PROXY_DATA_DIR: tempDataDir(), ...env },
    redis: h.redis.client(),
    subscriber: h.redis.client(),
    catalogue: h.snapshot,
    logger: false,
  });
  await proxy.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = proxy.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    proxy,
    baseURL: `http://127.0.0.1:${port}/v1`,
    async stop() {
      const closing = proxy.app.close();
      proxy.app.server.closeAllConnections();
      await closing;
    },
  };
}

/** The chat requests the simulators were sent while `run` ran (both of them), and what it returned. */
export async function sentDuring(
  sims: Simulator[],
  run: () => Promise<unknown>,
): Promise<Record<string, unknown>[]> {
  const before = sims.map((s) => s.received().length);
  await run();
  return sims
    .flatMap((s, i) => s.received().slice(before[i]))
    .filter((r) => r.path === '/v1/chat/completions')
    .map((r) => r.json as Record<string, unknown>);
}

/** What CHAT_MODEL's USD prices (input 1, cached input 0.5, output 2 per 1M tokens) make of a record. */
export function chatModelCost(r: UsageEntry): number {
  const [input, cached, output] = ['1', '0.5', '2'].map((v) => BigInt(parseDecimalToNano(v))) as [
    bigint,
    bigint,
    bigint,
  ];
  const inTokens = BigInt(r.inputTokens!);
  const cachedTokens = BigInt(r.cachedTokens ?? 0);
  const scaled = (inTokens - cachedTokens) * input + cachedTokens * cached + BigInt(r.outputTokens!) * output;
  return Number((scaled + 999_999n) / 1_000_000n); // rounded up to the nano, once
}

/**
 * Waits (generously: the machine is shared) until the simulators have seen one more request
 * aborted than in `before`, and gives back the output tokens they generated since.
 */
export async function generatedUntilAborted(
  sims: Simulator[],
  before: ReturnType<Simulator['stats']>[],
): Promise<number> {
  for (let i = 0; i < 1000; i++) {
    const now = sims.map((s) => s.stats());
    if (now.reduce((n, x, k) => n + x.aborted - before[k]!.aborted, 0) === 1)
      return now.reduce((n, x, k) => n + x.generationTokens - before[k]!.generationTokens, 0);
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the engine request was never aborted');
}

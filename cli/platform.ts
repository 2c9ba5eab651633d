// The whole platform on one machine, as `make dev` runs it: a Redis of its own (AOF on) unless a URL
// is given, a PostgreSQL of its own for the durable journal unless DATABASE_URL is given, the operator on the local runtime (Model YAML files, simulator engines as child
// processes), the proxy and the console; a demo account with credits, a key and a console user.
// `make dev` (cli/dev.ts) prints its banner; the browser tests start the very same thing on free
// ports in a folder of their own.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Accounts } from '../core/accounts/accounts.ts';
import { Team } from '../core/accounts/team.ts';
import { Users } from '../core/accounts/users.ts';
import { Metering } from '../core/billing/index.ts';
import { CatalogueStore } from '../core/catalogue/index.ts';
import { loadConfig } from '../core/config/index.ts';
import { newId } from '../core/ids.ts';
import { Journal } from '../core/journal/index.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { formatNano, parseDecimalToNano } from '../core/money.ts';
import { NODE_SERVICE_FLAGS } from '../core/node-flags.ts';
import { connectRedis } from '../core/redis/client.ts';
import { requireNoEviction } from '../core/redis/policy.ts';
import { startPostgres } from './postgres-server.ts';

export const DEMO_EMAIL = 'demo@modelplane.dev';

export interface PlatformOptions {
  /** Where Redis data, the key-encryption key, the demo ids and the proxy journal live. */
  dataDir: string;
  /** Model YAML the operator serves. */
  modelsDir: string;
  /** A Redis to use instead of starting one. */
  redisUrl?: string;
  redisPort: number;
  /**
   * The durable journal: a PostgreSQL to use (DATABASE_URL), or a port to start one of our own on
   * (data in <dataDir>/postgres). Neither: no journal (the browser tests, which do not need one).
   */
  databaseUrl?: string;
  postgresPort?: number;
  proxyPort: number;
  /** The proxy's /metrics port (not the API port); 0 or unset: any free port. */
  proxyMetricsPort?: number;
  consolePort: number;
  operatorPort: number;
  /** Extra environment for every service (tests shorten timers this way). */
  env?: Record<string, string>;
  /** Where the services' output goes, each line prefixed with the service's name. */
  log?: (line: string) => void;
  /** Called when a service exits on its own (make dev stops everything then). */
  onExit?: (name: string, code: number | string | null) => void;
}

export interface Platform {
  redisUrl: string;
  /** The journal's database, when there is one. */
  databaseUrl: string | undefined;
  kek: string;
  /** The chat-completions base, e.g. http://localhost:8080/v1. */
  apiBase: string;
  consoleUrl: string;
  demo: { accountId: string; secret: string; balance: string; email: string; password: string };
  stop(): Promise<void>;
}

export async function startPlatform(o: PlatformOptions): Promise<Platform> {
  const data = resolve(o.dataDir);
  mkdirSync(resolve(data, 'redis'), { recursive: true });
  const children: ChildProcess[] = [];
  /** The stores (Redis, PostgreSQL): stopped after the services, which write to them as they stop. */
  const stores = new Set<ChildProcess>();
  let stopping = false;
  let started = false;
  const log = o.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  // A part that exits while the platform starts fails the start (everything is stopped and the
  // error names the part and its last words); after the start, o.onExit decides.
  let failStart!: (err: Error) => void;
  const startFailed = new Promise<never>((_, reject) => {
    failStart = reject;
  });
  startFailed.catch(() => {}); // observed by the race below; never unhandled
  const lastWords = new Map<string, string[]>();

  const run = (name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) => {
    const child = spawn(cmd, args, {
      env: { ...process.env, ...o.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return adopt(name, child);
  };
  /** Watches a part: its output into the log (and its last words), its exit. */
  const adopt = (name: string, child: ChildProcess) => {
    const pipe = (stream: NodeJS.ReadableStream | null) => {
      let buf = '';
      stream?.on('data', (chunk: Buffer) => {
        buf += chunk.toString();
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const line of lines) {
          log(`[${name}] ${line}`);
          const words = lastWords.get(name) ?? [];
          words.push(line);
          if (words.length > 8) words.shift();
          lastWords.set(name, words);
        }
      });
    };
    pipe(child.stdout);
    pipe(child.stderr);
    const exited = (how: string) => {
      if (stopping) return;
      if (started) {
        o.onExit?.(name, how);
        return;
      }
      const words = (lastWords.get(name) ?? []).filter((l) => l.trim() !== '');
      failStart(
        new Error(
          `the ${name} ${how} while the platform was starting${words.length ? `:\n  ${words.join('\n  ')}` : ' (it said nothing)'}`,
        ),
      );
    };
    child.on('exit', (code, signal) =>
      exited(signal ? `was stopped by ${signal}` : `exited with code ${code}`),
    );
    child.on('error', (err) => exited(`could not be started (${err.message})`));
    children.push(child);
    return child;
  };

  const stop = async () => {
    if (stopping) return;
    stopping = true;
    const exited = (c: ChildProcess) =>
      c.exitCode !== null || c.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((r) => c.once('exit', () => r()));
    // The services first (the proxy lands its settlements in Redis on SIGTERM), Redis last.
    const services = children.filter((c) => !stores.has(c));
    for (const c of services) c.kill('SIGTERM');
    await Promise.race([Promise.all(services.map(exited)), sleep(8_000)]);
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await Promise.race([Promise.all(children.map(exited)), sleep(3_000)]);
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  };

  /** Each step of the start, cut short by a part that exits meanwhile (its waits then end too). */
  const abandoned = new AbortController();
  const step = <T>(p: Promise<T>): Promise<T> => Promise.race([p, startFailed]);
  try {
    let redisUrl = o.redisUrl;
    if (!redisUrl) {
      run('redis', 'redis-server', [
        '--port',
        String(o.redisPort),
        '--bind',
        '127.0.0.1',
        '--dir',
        resolve(data, 'redis'),
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
        '--save',
        '',
        // Every part refuses an evicting Redis (core/redis/policy.ts).
        '--maxmemory-policy',
        'noeviction',
      ]);
      redisUrl = `redis://127.0.0.1:${o.redisPort}`;
      stores.add(children[children.length - 1]!);
    }
    await step(waitForRedis(redisUrl, abandoned.signal));
    // The platform writes the demo account's credits itself: like each part, it refuses an
    // evicting Redis (a given REDIS_URL may be one) before anything runs on it.
    await step(refuseEvictingRedis(redisUrl));
    let databaseUrl = o.databaseUrl;
    if (databaseUrl === undefined && o.postgresPort !== undefined) {
      const pg = await step(
        startPostgres({
          dataDir: resolve(data, 'postgres'),
          port: o.postgresPort,
          log: (line) => log(`[postgres] ${line}`),
        }),
      );
      adopt('postgres', pg.child);
      stores.add(pg.child);
      databaseUrl = pg.url;
    }
    const kek = devKek(data);
    writeFileSync(
      resolve(data, 'dev.env'),
      `REDIS_URL=${redisUrl}\nMODELPLANE_KEK=${kek}\n${databaseUrl ? `DATABASE_URL=${databaseUrl}\n` : ''}`,
      { mode: 0o600 },
    );
    const env = {
      REDIS_URL: redisUrl,
      MODELPLANE_KEK: kek,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    const apiOrigin = `http://localhost:${o.proxyPort}`;
    const consoleUrl = `http://localhost:${o.consolePort}`;

    const tsx = [...NODE_SERVICE_FLAGS, '--import', 'tsx'];
    run(
      'operator',
      process.execPath,
      [
        ...tsx,
        'operator/main.ts',
        '--runtime',
        'local',
        '--models-dir',
        o.modelsDir,
        '--port',
        String(o.operatorPort),
      ],
      env,
    );
    run('proxy', process.execPath, [...tsx, 'proxy/main.ts'], {
      ...env,
      PROXY_PORT: String(o.proxyPort),
      PROXY_METRICS_HOST: '127.0.0.1',
      PROXY_METRICS_PORT: String(o.proxyMetricsPort ?? 0),
      PROXY_DATA_DIR: resolve(data, 'proxy'),
      MEDIA_DIR: resolve(data, 'media'),
      // The console's pages call the API from the browser (the Playground).
      PROXY_CORS_ORIGINS: consoleUrl,
      LOG_LEVEL: o.env?.LOG_LEVEL ?? 'warn',
    });
    run('console', process.execPath, [...tsx, 'console/main.ts'], {
      ...env,
      CONSOLE_PORT: String(o.consolePort),
      CONSOLE_API_BASE_URL: `${apiOrigin}/v1`,
      CONSOLE_PUBLIC_URL: consoleUrl,
      // The Batches page hands out the batches' files from the proxy's media store.
      MEDIA_DIR: resolve(data, 'media'),
      LOG_LEVEL: o.env?.LOG_LEVEL ?? 'warn',
    });
    const demo = await step(ensureDemoAccount(data, redisUrl, kek, databaseUrl));
    await step(waitForOk(`${apiOrigin}/readyz`, 'the proxy', abandoned.signal));
    await step(waitForOk(`${consoleUrl}/healthz`, 'the console', abandoned.signal));
    await step(waitForModels(apiOrigin, demo.secret, redisUrl, o.modelsDir, abandoned.signal));
    started = true;
    return { redisUrl, databaseUrl, kek, apiBase: `${apiOrigin}/v1`, consoleUrl, demo, stop };
  } catch (err) {
    abandoned.abort();
    await stop();
    throw err;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForRedis(url: string, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!signal.aborted) {
    const r = connectRedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {}); // refused while redis-server boots; retried below
    try {
      await r.connect();
      await r.ping();
      r.disconnect();
      return;
    } catch (err) {
      r.disconnect();
      if (Date.now() > deadline) throw new Error(`Redis at ${url} did not answer: ${(err as Error).message}`);
      await sleep(100);
    }
  }
}

async function refuseEvictingRedis(url: string): Promise<void> {
  const r = connectRedis(url, { maxRetriesPerRequest: 1 });
  try {
    await requireNoEviction(r, 'make dev');
  } finally {
    r.disconnect();
  }
}

/** The banner's curl lines must work when printed: wait for the service to answer. */
async function waitForOk(url: string, what: string, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !signal.aborted) {
    try {
      if ((await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)]) })).ok) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`${what} did not become ready at ${url}`);
}

/**
 * The example models a demo account can call, by id: every file in the models folder except
 * invite-only and coming-soon ones.
 */
export function exampleModelIds(modelsDir: string): string[] {
  const dir = resolve(modelsDir);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map(
      (f) =>
        parseYaml(readFileSync(resolve(dir, f), 'utf8')) as { spec?: { id?: string; availability?: string } },
    )
    .filter((m) => m.spec?.id && m.spec.availability !== 'inviteOnly' && m.spec.availability !== 'comingSoon')
    .map((m) => m.spec!.id!);
}

/**
 * The banner's examples must work when printed: wait until every example model is listed for the
 * demo key and has a ready engine (catalogued with an endpoint).
 */
async function waitForModels(
  base: string,
  secret: string,
  redisUrl: string,
  modelsDir: string,
  signal: AbortSignal,
): Promise<void> {
  const want = exampleModelIds(modelsDir);
  const redis = connectRedis(redisUrl);
  const catalogue = new CatalogueStore(redis);
  const deadline = Date.now() + 120_000;
  try {
    while (!signal.aborted) {
      const listed = await fetch(`${base}/v1/models`, {
        headers: { authorization: `Bearer ${secret}` },
        signal,
      })
        .then((r) => r.json() as Promise<{ data?: { id: string }[] }>)
        .catch(() => ({ data: [] as { id: string }[] }));
      const ids = new Set((listed.data ?? []).map((m) => m.id.toLowerCase()));
      const entries = await Promise.all(want.map((id) => catalogue.get(id)));
      const missing = want.filter(
        (id, i) => !ids.has(id.toLowerCase()) || (entries[i]?.endpoints.length ?? 0) === 0,
      );
      if (missing.length === 0) return;
      if (Date.now() > deadline)
        throw new Error(`these example models never became ready: ${missing.join(', ')}`);
      await sleep(250);
    }
  } finally {
    redis.disconnect();
  }
}

function devKek(data: string): string {
  const file = resolve(data, 'kek');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}

async function ensureDemoAccount(data: string, redisUrl: string, kek: string, databaseUrl?: string) {
  const config = loadConfig({ ...process.env, REDIS_URL: redisUrl, MODELPLANE_KEK: kek });
  const redis = connectRedis(redisUrl);
  // The demo credits go through the journal first, like every top-up when there is one.
  const journal = databaseUrl ? await Journal.open(databaseUrl, { max: 1 }) : undefined;
  try {
    const accounts = new Accounts(redis);
    const keys = new ApiKeys(redis, { brand: config.MODELPLANE_BRAND, kek: config.kek });
    const metering = new Metering(redis, journal ? { beforeTopUp: (t) => journal.commitTopUp(t) } : {});
    const idFile = resolve(data, 'demo-account');
    let accountId = existsSync(idFile) ? readFileSync(idFile, 'utf8').trim() : '';
    if (!accountId || !(await accounts.get(accountId))) {
      const account = await accounts.create({ name: 'Demo', country: 'US' });
      accountId = account.id;
      writeFileSync(idFile, accountId);
      await metering.topUp({
        accountId,
        topUpId: newId('topup'),
        amount: parseDecimalToNano('100'),
        note: 'make dev: demo credits',
      });
    }
    // The console's demo user: its password is made once and kept with the other dev secrets.
    const passwordFile = resolve(data, 'demo-password');
    if (!existsSync(passwordFile))
      writeFileSync(passwordFile, randomBytes(9).toString('base64url'), { mode: 0o600 });
    const password = readFileSync(passwordFile, 'utf8').trim();
    const users = new Users(redis);
    const user =
      (await users.verify(DEMO_EMAIL, password)) ??
      (await users.create({ email: DEMO_EMAIL, password, accountId }).catch(() => null));
    if (user) await new Team(redis).add(accountId, user.id, 'owner');
    await keys.ensureDefaultKey(accountId);
    const active = (await keys.list(accountId)).find((k) => k.status === 'active');
    const secret = active
      ? await keys.show(accountId, active.id)
      : (await keys.create(accountId, { name: 'dev' })).secret;
    const { balance } = await metering.balance(accountId);
    return { accountId, secret, balance: formatNano(balance), email: DEMO_EMAIL, password };
  } finally {
    await journal?.close();
    await redis.quit();
  }
}

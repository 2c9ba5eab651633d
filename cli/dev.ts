// `make dev`: the whole platform on this machine with embedded defaults. Starts a Redis of its own
// (AOF on, data in .data/redis) unless REDIS_URL is set, the operator on the local runtime (Model
// YAML in examples/models, simulator engines as child processes), the proxy; creates a demo
// account with credits and prints its key and the base addresses. Ctrl-C stops all it started.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import { parse as parseYaml } from 'yaml';
import { Accounts } from '../core/accounts.ts';
import { Metering } from '../core/billing/index.ts';
import { CatalogueStore } from '../core/catalogue/index.ts';
import { loadConfig } from '../core/config.ts';
import { newId } from '../core/ids.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { formatNano, parseDecimalToNano } from '../core/money.ts';
import { NODE_SERVICE_FLAGS } from '../core/node-flags.ts';
import { Team } from '../core/team.ts';
import { Users } from '../core/users.ts';

const DATA = resolve('.data');
const children: ChildProcess[] = [];

function run(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `[${name}] `;
  const pipe = (stream: NodeJS.ReadableStream | null, to: NodeJS.WriteStream) => {
    let buf = '';
    stream?.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) to.write(`${prefix + line}\n`);
    });
  };
  pipe(child.stdout, process.stdout);
  pipe(child.stderr, process.stderr);
  child.on('exit', (code, signal) => {
    if (!stopping) console.error(`${prefix}exited (${signal ?? code}); stopping everything`);
    void stop(1);
  });
  children.push(child);
  return child;
}

let stopping = false;
async function stop(code = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  process.exit(code);
}

async function waitForRedis(url: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    r.on('error', () => {}); // refused while redis-server boots; retried below
    try {
      await r.connect();
      await r.ping();
      r.disconnect();
      return;
    } catch (err) {
      r.disconnect();
      if (Date.now() > deadline) throw new Error(`Redis at ${url} did not answer: ${(err as Error).message}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }
}

/** The banner's curl lines must work when printed: wait for the proxy to have Redis and a catalogue. */
async function waitForReady(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the proxy did not become ready at ${url}`);
}

/**
 * The example models a demo account can call, by id: every file in examples/models except
 * invite-only and coming-soon ones.
 */
function exampleModelIds(): string[] {
  const dir = resolve('examples/models');
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
async function waitForModels(base: string, secret: string, redisUrl: string): Promise<void> {
  const want = exampleModelIds();
  const redis = new Redis(redisUrl);
  const catalogue = new CatalogueStore(redis);
  const deadline = Date.now() + 120_000;
  try {
    for (;;) {
      const listed = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${secret}` } })
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
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    redis.disconnect();
  }
}

function devSecrets(): { kek: string } {
  const file = resolve(DATA, 'kek');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  return { kek: readFileSync(file, 'utf8').trim() };
}

const DEMO_EMAIL = 'demo@modelplane.dev';

async function ensureDemoAccount(redisUrl: string, kek: string) {
  const config = loadConfig({ ...process.env, REDIS_URL: redisUrl, MODELPLANE_KEK: kek });
  const redis = new Redis(redisUrl);
  try {
    const accounts = new Accounts(redis);
    const keys = new ApiKeys(redis, { brand: config.MODELPLANE_BRAND, kek: config.kek });
    const metering = new Metering(redis);
    const idFile = resolve(DATA, 'demo-account');
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
    const passwordFile = resolve(DATA, 'demo-password');
    if (!existsSync(passwordFile))
      writeFileSync(passwordFile, randomBytes(9).toString('base64url'), { mode: 0o600 });
    const demoPassword = readFileSync(passwordFile, 'utf8').trim();
    const users = new Users(redis);
    const demoUser =
      (await users.verify(DEMO_EMAIL, demoPassword)) ??
      (await users.create({ email: DEMO_EMAIL, password: demoPassword, accountId }).catch(() => null));
    if (demoUser) await new Team(redis).add(accountId, demoUser.id, 'owner');
    await keys.ensureDefaultKey(accountId);
    const active = (await keys.list(accountId)).find((k) => k.status === 'active');
    const secret = active
      ? await keys.show(accountId, active.id)
      : (await keys.create(accountId, { name: 'dev' })).secret;
    const { balance } = await metering.balance(accountId);
    return { accountId, secret, balance: formatNano(balance), demoPassword };
  } finally {
    await redis.quit();
  }
}

async function main(): Promise<void> {
  mkdirSync(resolve(DATA, 'redis'), { recursive: true });
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    const port = Number(process.env.DEV_REDIS_PORT ?? 6390);
    run('redis', 'redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      resolve(DATA, 'redis'),
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--save',
      '',
    ]);
    redisUrl = `redis://127.0.0.1:${port}`;
  }
  await waitForRedis(redisUrl);
  const { kek } = devSecrets();
  writeFileSync(resolve(DATA, 'dev.env'), `REDIS_URL=${redisUrl}\nMODELPLANE_KEK=${kek}\n`, { mode: 0o600 });
  const env = { REDIS_URL: redisUrl, MODELPLANE_KEK: kek };

  const tsx = [...NODE_SERVICE_FLAGS, '--import', 'tsx'];
  run(
    'operator',
    process.execPath,
    [...tsx, 'operator/main.ts', '--runtime', 'local', '--models-dir', 'examples/models'],
    env,
  );
  const proxyPort = process.env.PROXY_PORT ?? '8080';
  const consolePort = process.env.CONSOLE_PORT ?? '3000';
  run('proxy', process.execPath, [...tsx, 'proxy/main.ts'], {
    ...env,
    PROXY_PORT: proxyPort,
    // The console's pages call the API from the browser (the Playground).
    PROXY_CORS_ORIGINS: `http://localhost:${consolePort}`,
    LOG_LEVEL: 'warn',
  });

  run('console', process.execPath, [...tsx, 'console/main.ts'], {
    ...env,
    CONSOLE_PORT: consolePort,
    CONSOLE_API_BASE_URL: `http://localhost:${proxyPort}/v1`,
    LOG_LEVEL: 'warn',
  });
  const demo = await ensureDemoAccount(redisUrl, kek);
  const base = `http://localhost:${proxyPort}`;
  await waitForReady(`${base}/readyz`);
  await waitForModels(base, demo.secret, redisUrl);
  console.log(`
modelplane dev is up (engines are the simulator, not real models).
  Chat-completions base: ${base}/v1
  Messages base:         ${base}  (Anthropic SDKs: the key as x-api-key)
  Demo account:          ${demo.accountId} (balance ${demo.balance} USD)
  API key:               ${demo.secret}

  curl ${base}/v1/models -H "Authorization: Bearer ${demo.secret}"
  curl ${base}/v1/chat/completions -H "Authorization: Bearer ${demo.secret}" -H 'Content-Type: application/json' \\
    -d '{"model":"Meta-Llama/Llama-3.1-8B-Instruct","messages":[{"role":"user","content":"Hello"}]}'

  Console API:           http://localhost:${consolePort}/api (sign in as ${DEMO_EMAIL} / ${demo.demoPassword})
  Admin CLI: npx modelplane accounts show ${demo.accountId}
Ctrl-C stops everything.`);
}

main().catch((err) => {
  console.error(`make dev: ${(err as Error).message}`);
  void stop(1);
});

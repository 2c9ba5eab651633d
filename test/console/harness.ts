// The console server for API tests: a real Redis, the real app on loopback, and helpers to make
// accounts with an owner, sign in, and call the JSON API the way the web app does (session cookie,
// x-csrf-token). Browser tests start the same way.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildConsoleApp } from '../../console/app.ts';
import { Accounts } from '../../core/accounts/accounts.ts';
import { type Role, Team } from '../../core/accounts/team.ts';
import { Users } from '../../core/accounts/users.ts';
import { type Config, loadConfig } from '../../core/config/index.ts';
import type { Journal } from '../../core/journal/index.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import type { Redis } from '../../core/redis/client.ts';
import { consoleCall, type Signed } from '../helpers/console-client.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { registerSecrets, runLogStream } from '../helpers/run-log.ts';

export const PASSWORD = 'correct horse battery';

export interface Person {
  email: string;
  userId: string;
  accountId: string;
}

export type { Signed };

export interface ConsoleHarness {
  origin: string;
  config: Config;
  redis: Redis;
  app: FastifyInstance;
  keys: ApiKeys;
  accounts: Accounts;
  users: Users;
  team: Team;
  /** A new account (country US unless given) with a new user as its owner. */
  newOwner(name: string, country?: string | null): Promise<Person>;
  /** A new user who is `role` in an existing account. */
  newMember(accountId: string, name: string, role?: Role): Promise<Person>;
  signIn(email: string, password?: string): Promise<Response>;
  session(who: { email: string }): Promise<Signed>;
  /** A JSON call to /api; `csrf: false` leaves the token out. */
  call(s: Signed | null, method: string, path: string, body?: unknown, csrf?: boolean): Promise<Response>;
  json<T>(s: Signed | null, method: string, path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
}

/** Invitation links in answers (/invite/<token>): noted for the run's credential scan. */
const INVITE_TOKEN = /\/invite\/([A-Za-z0-9_-]{32})/g;

export interface ConsoleOptions {
  /** Where the console's log lines go (at LOG_LEVEL, default info); default the run's log folder. */
  logStream?: NodeJS.WritableStream;
  /** The durable journal (test/helpers/postgres.ts journalForFile): top-ups and the billing ledger use it. */
  journal?: Journal;
}

export async function startConsole(
  env: Record<string, string> = {},
  opts: ConsoleOptions = {},
): Promise<ConsoleHarness> {
  const server: TestRedis = await startRedis();
  const redis = server.client();
  const config = loadConfig({
    REDIS_URL: server.url,
    MODELPLANE_KEK: randomBytes(32).toString('hex'),
    ...env,
  });
  registerSecrets(
    config.MODELPLANE_KEK,
    config.STRIPE_SECRET_KEY,
    config.STRIPE_WEBHOOK_SECRET,
    config.CONSOLE_SERVICE_TOKEN,
  );
  // Real logs at the configured level (info unless the test says), read by the final credential scan.
  const app = await buildConsoleApp({
    config,
    redis,
    logStream: opts.logStream ?? runLogStream('console'),
    ...(opts.journal ? { journal: opts.journal } : {}),
  });
  const origin = await app.listen({ host: '127.0.0.1', port: 0 });
  const accounts = new Accounts(redis);
  const users = new Users(redis);
  const team = new Team(redis);
  const keys = new ApiKeys(redis, { brand: config.MODELPLANE_BRAND, kek: config.kek });

  const newUser = async (name: string, accountId: string, role: Role): Promise<Person> => {
    const email = `${name}-${randomBytes(3).toString('hex')}@example.com`;
    const user = await users.create({ email, password: PASSWORD, accountId });
    await team.add(accountId, user.id, role);
    return { email, userId: user.id, accountId };
  };

  const call = async (s: Signed | null, method: string, path: string, body?: unknown, csrf = true) => {
    const res = await consoleCall(origin, s, method, path, body, csrf);
    registerSecrets(...[...(await res.clone().text()).matchAll(INVITE_TOKEN)].map((m) => m[1]));
    return res;
  };

  const signIn = (email: string, password = PASSWORD) =>
    fetch(`${origin}/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });

  return {
    origin,
    config,
    redis,
    app,
    keys,
    accounts,
    users,
    team,
    async newOwner(name, country = 'US') {
      const account = await accounts.create({ name, country });
      return newUser(name.toLowerCase().replace(/[^a-z0-9]+/g, '-'), account.id, 'owner');
    },
    newMember: (accountId, name, role = 'member') => newUser(name, accountId, role),
    signIn,
    async session(who) {
      const res = await signIn(who.email);
      if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
      const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
      registerSecrets(cookie.slice(cookie.indexOf('=') + 1));
      return { cookie, csrf: ((await res.json()) as { csrfToken: string }).csrfToken };
    },
    call,
    async json<T>(s: Signed | null, method: string, path: string, body?: unknown) {
      const res = await call(s, method, path, body);
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as T;
    },
    async stop() {
      await app.close();
      await server.stop();
    },
  };
}

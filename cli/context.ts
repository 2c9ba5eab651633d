// What every command needs: the domain stores over one Redis connection, and an output sink that
// prints JSON with --json or a readable line otherwise.
import { existsSync, readFileSync } from 'node:fs';
import { Accounts } from '../core/accounts/accounts.ts';
import { Team } from '../core/accounts/team.ts';
import { Users } from '../core/accounts/users.ts';
import { Metering } from '../core/billing/index.ts';
import { CatalogueStore } from '../core/catalogue/index.ts';
import { type Config, loadConfig } from '../core/config/index.ts';
import { Journal } from '../core/journal/index.ts';
import { ApiKeys } from '../core/keys/index.ts';
import { connectRedis, type Redis } from '../core/redis/client.ts';
import { UsageError } from './args.ts';

export interface Context {
  config: Config;
  redis: Redis;
  accounts: Accounts;
  keys: ApiKeys;
  metering: Metering;
  users: Users;
  team: Team;
  catalogue: CatalogueStore;
  /** The durable journal when DATABASE_URL is set (opened, and migrated, on first use), else null. */
  journal(): Promise<Journal | null>;
  json: boolean;
  print(human: string, data: unknown): void;
  close(): Promise<void>;
}

/**
 * `make dev` writes `.data/dev.env` (REDIS_URL, MODELPLANE_KEK, DATABASE_URL) so the CLI run from the repo talks
 * to the dev platform without exporting anything. Variables already set win.
 */
export function devEnv(path = '.data/dev.env'): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (!existsSync(path)) return env;
  // The file's journal belongs to the file's Redis: with another Redis named, it is not used (the
  // CLI's tests name their own Redis and must not write into a running make dev's journal).
  const ownRedis = env.REDIS_URL !== undefined;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m && env[m[1]!] === undefined && !(ownRedis && m[1] === 'DATABASE_URL')) env[m[1]!] = m[2]!;
  }
  return env;
}

export function createContext(json: boolean, out: (s: string) => void = console.log): Context {
  const config = loadConfig(devEnv());
  const redis = connectRedis(config.REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: false });
  let opened: Promise<Journal> | undefined;
  const journal = async () => {
    if (config.DATABASE_URL === undefined) return null;
    opened ??= Journal.open(config.DATABASE_URL, { max: 2 });
    return opened;
  };
  return {
    config,
    redis,
    accounts: new Accounts(redis),
    keys: new ApiKeys(redis, { brand: config.MODELPLANE_BRAND, kek: config.kek }),
    // A credit grant is committed in the journal before Redis credits it (issue 23).
    metering: new Metering(redis, {
      beforeTopUp: async (t) => (await journal())?.commitTopUp(t),
    }),
    users: new Users(redis),
    team: new Team(redis),
    catalogue: new CatalogueStore(redis),
    journal,
    json,
    print(human, data) {
      out(json ? JSON.stringify(data, null, 2) : human);
    },
    async close() {
      if (opened) await (await opened.catch(() => null))?.close();
      await redis.quit();
    },
  };
}

export async function requireAccount(ctx: Context, id: string): Promise<void> {
  if (!(await ctx.accounts.get(id))) throw new UsageError(`no account '${id}'`);
}

// ApiKeys: the key lifecycle of SPEC "API key" (create, Show Key, rotate, delete, Default key) and
// the authentication lookup the proxy runs on every request.
//
// Write ordering, because the global lookup `mp:keyhash:<sha256>` sits in another Redis slot than
// the account's records and so cannot share their atomic script:
// - a new secret's lookup entry is claimed (SET NX) BEFORE the record script commits, and removed
//   again if the script refuses. A lookup entry alone authenticates nothing;
// - authenticate() requires the record to be active AND to hold that very secret hash, so a rotated
//   or deleted secret fails the instant the record script commits; the lookup entry is removed
//   right after and the invalidation is published.

import {
  type BudgetWindow,
  DEFAULT_BUDGET_WINDOW,
  keyMonthSpend,
  keyWindowSpend,
} from '../billing/key-spend.ts';
import {
  NO_RATE_LIMITS,
  parseRateLimits,
  RATE_LIMIT_FIELDS,
  RATE_LIMIT_NAMES,
  type RateLimitName,
  type RateLimits,
  type RateUse,
  rateUse,
  rateUseFields,
  validateRateLimits,
} from '../billing/rate-limits.ts';
import { open, seal } from '../crypto.ts';
import { ApiError, invalidRequest } from '../errors.ts';
import { newId } from '../ids.ts';
import { announce } from '../redis/announce.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys, channels, globalKeys } from '../redis/keyspace.ts';
import {
  type ApiKeyRecord,
  type AuthenticatedKey,
  getKeyRecord,
  listKeyRecords,
  parseSpendLimit,
  RATE_LIMIT_HASH_FIELDS,
  retireSecretHash,
  softDeleteKey,
  validateKeyName,
  validateSpendLimit,
  validateSpendWindow,
} from './records.ts';
import {
  createKeyScript,
  renameKeyScript,
  rotateKeyScript,
  setRateLimitsScript,
  setSpendLimitScript,
} from './scripts.ts';
import {
  BRAND_PATTERN,
  currentKeyPattern,
  generateSecret,
  hashSecret,
  isWellFormedSecret,
  lastFour,
} from './secret.ts';

export const DEFAULT_KEY_NAME = 'Default';

export interface ApiKeysOptions {
  /** The brand word of new secrets: `sk-<brand>-` + 48 hex. */
  brand: string;
  /** 32-byte key-encryption key for the stored (sealed) secrets. */
  kek: Buffer;
}

interface InsertInput {
  name: unknown;
  createdBy: string | null;
  secret: string;
  /** Only when the account has never had a key (ensureDefaultKey). */
  onlyIfFirst: boolean;
  spendLimit?: unknown;
  spendWindow?: unknown;
}

/** Said on the console's forms as it is, so in words (with `param` for code). */
const nameTaken = (name: string) =>
  invalidRequest(`Another key of this account is already named “${name}”: choose another name.`, 'name');

const keyNotFound = (keyId: string) => new ApiError('not_found', `No API key '${keyId}' in this account.`);

// The sealed secret is bound to its account and key: a ciphertext copied to another record fails.
const sealAad = (accountId: string, keyId: string) => `apikey:${accountId}:${keyId}`;

export class ApiKeys {
  private readonly brand: string;
  private readonly kek: Buffer;
  private readonly pattern: RegExp;

  constructor(
    private readonly redis: Redis,
    opts: ApiKeysOptions,
  ) {
    if (!BRAND_PATTERN.test(opts.brand)) throw new Error(`invalid key brand '${opts.brand}'`);
    if (opts.kek.length !== 32) throw new Error(`KEK must be 32 bytes, got ${opts.kek.length}`);
    this.brand = opts.brand;
    this.kek = opts.kek;
    this.pattern = currentKeyPattern(opts.brand);
  }

  /**
   * Generate New Key. The secret is returned once here and otherwise only by show(). `spendLimit`
   * (nano per `spendWindow`, a UTC calendar month unless it says day or week; null or absent =
   * none) caps what calls made with it are charged.
   */
  async create(
    accountId: string,
    input: {
      name: string;
      createdBy?: string | null;
      spendLimit?: number | null;
      spendWindow?: BudgetWindow;
    },
  ): Promise<{ key: ApiKeyRecord; secret: string }> {
    const secret = generateSecret(this.brand);
    const key = await this.insert(accountId, {
      name: input.name,
      createdBy: input.createdBy ?? null,
      secret,
      onlyIfFirst: false,
      spendLimit: input.spendLimit ?? null,
      spendWindow: input.spendWindow ?? DEFAULT_BUDGET_WINDOW,
    });
    return { key: key!, secret };
  }

  /**
   * Renames an active key (issue 48 item 10): the same rules as a new key's name, unique among the
   * account's active keys (case aside). Its id, secret, limits and usage stay; reports name it anew.
   */
  async rename(accountId: string, keyId: string, name: unknown): Promise<ApiKeyRecord> {
    const valid = validateKeyName(name);
    const k = accountKeys(accountId);
    const result = await renameKeyScript.run(
      this.redis,
      [k.key(keyId), k.keyNames],
      [valid.name, valid.nameKey],
    );
    if (result === 'not_found') throw keyNotFound(keyId);
    if (result === 'name_taken') throw nameTaken(valid.name);
    return (await this.get(accountId, keyId))!;
  }

  /**
   * Sets (nano per window) or removes (null, with its window) an active key's spend limit; the
   * window (a UTC day, ISO week or UTC month) is set with it, or stays as it was when not given (a
   * month for a key that never had one). The period's earlier spend counts at once (every key's
   * spend is kept in every period, limited or not). Proxies drop their cached lookup of the key, so
   * the next call sees the change; calls already running go on.
   */
  async setSpendLimit(
    accountId: string,
    keyId: string,
    spendLimit: number | null,
    spendWindow?: BudgetWindow,
  ): Promise<ApiKeyRecord> {
    const limit = validateSpendLimit(spendLimit);
    const window = spendWindow === undefined ? '' : validateSpendWindow(spendWindow);
    const result = (await setSpendLimitScript.run(
      this.redis,
      [accountKeys(accountId).key(keyId)],
      [limit === null ? '' : limit, window],
    )) as [string, string?];
    if (result[0] !== 'ok') throw keyNotFound(keyId);
    if (result[1]) await announce(this.redis, channels.keyChanged, result[1]);
    const key = await this.get(accountId, keyId);
    return key!;
  }

  /**
   * Sets or unsets (null) some of an active key's rate limits (issue 34); the ones not named stay.
   * Like a spend limit change, proxies drop their cached lookup (a limited key's calls reserve per
   * call) and the key's running calls go on; the windows already taken stay taken.
   */
  async setRateLimits(accountId: string, keyId: string, limits: Partial<RateLimits>): Promise<ApiKeyRecord> {
    const set = validateRateLimits(limits);
    const args = Object.entries(set).flatMap(([name, v]) => [
      RATE_LIMIT_FIELDS[name as keyof RateLimits],
      v === null ? '' : String(v),
    ]);
    const result = (await setRateLimitsScript.run(this.redis, [accountKeys(accountId).key(keyId)], args)) as [
      string,
      string?,
    ];
    if (result[0] !== 'ok') throw keyNotFound(keyId);
    if (result[1]) await announce(this.redis, channels.keyChanged, result[1]);
    return (await this.get(accountId, keyId))!;
  }

  /** Each key's net spend in the UTC calendar month of `nowMs` (nano), for the keys table. */
  monthSpend(accountId: string, keyIds: readonly string[], nowMs?: number): Promise<Map<string, number>> {
    return keyMonthSpend(this.redis, accountId, keyIds, nowMs);
  }

  /** Each key's net spend in the current period of its spend limit's window at `nowMs` (nano). */
  /** What the key has taken of each rate limit now (its buckets at Redis time; calls running). */
  async rateUse(accountId: string, keyId: string): Promise<RateUse> {
    const [values, [seconds, micros]] = await Promise.all([
      this.redis.hmget(accountKeys(accountId).keySpend, ...rateUseFields(keyId)),
      this.redis.time(),
    ]);
    const fields = Object.fromEntries(RATE_LIMIT_NAMES.map((n, i) => [n, values[i] ?? null]));
    return rateUse(
      fields as Record<RateLimitName, string | null>,
      Number(seconds) * 1000 + Math.floor(Number(micros) / 1000),
    );
  }

  windowSpend(
    accountId: string,
    keys: readonly { id: string; spendWindow: BudgetWindow }[],
    nowMs?: number,
  ): Promise<Map<string, number>> {
    return keyWindowSpend(
      this.redis,
      accountId,
      keys.map((k) => ({ id: k.id, window: k.spendWindow })),
      nowMs,
    );
  }

  /** Registers a secret issued elsewhere (e.g. `sk-abc...` from another gateway) so it keeps working (KEY-9). */
  async importLegacy(
    accountId: string,
    input: { name: string; secret: string; createdBy?: string | null },
  ): Promise<ApiKeyRecord> {
    if (!isWellFormedSecret(input.secret)) {
      throw invalidRequest(
        'secret must be 20 to 256 printable ASCII characters with no whitespace or control characters',
        'secret',
      );
    }
    // A rotated or deleted secret stays dead (KEY-5, KEY-6), whoever tries to bring it back.
    if ((await this.redis.exists(globalKeys.retiredKeyHash(hashSecret(input.secret)))) === 1) {
      throw invalidRequest('secret was revoked and cannot be used again', 'secret');
    }
    const key = await this.insert(accountId, {
      name: input.name,
      createdBy: input.createdBy ?? null,
      secret: input.secret,
      onlyIfFirst: false,
    });
    return key!;
  }

  /** Opening the API page: mints `Default` iff the account has never had a key (KEY-3). */
  async ensureDefaultKey(accountId: string): Promise<{ key: ApiKeyRecord; secret: string } | null> {
    // Cheap check first: the page is opened far more often than it mints anything.
    if ((await this.redis.exists(accountKeys(accountId).hadKey)) === 1) return null;
    const secret = generateSecret(this.brand);
    const key = await this.insert(accountId, {
      name: DEFAULT_KEY_NAME,
      createdBy: null,
      secret,
      onlyIfFirst: true,
    });
    return key ? { key, secret } : null;
  }

  list(accountId: string, opts: { includeDeleted?: boolean } = {}): Promise<ApiKeyRecord[]> {
    return listKeyRecords(this.redis, accountId, opts);
  }

  get(accountId: string, keyId: string): Promise<ApiKeyRecord | null> {
    return getKeyRecord(this.redis, accountId, keyId);
  }

  /** Show Key (KEY-4). A deleted key's value is gone (KEY-6). */
  async show(accountId: string, keyId: string): Promise<string> {
    const [status, sealed] = await this.redis.hmget(accountKeys(accountId).key(keyId), 'status', 'sealed');
    if (status !== 'active' || !sealed) throw keyNotFound(keyId);
    return open(this.kek, sealed, sealAad(accountId, keyId));
  }

  /** Rotate Key (KEY-5): same id, name, createdAt and usage; a new current-format secret. */
  async rotate(accountId: string, keyId: string): Promise<{ key: ApiKeyRecord; secret: string }> {
    const keyHash = accountKeys(accountId).key(keyId);
    if ((await this.redis.hget(keyHash, 'status')) !== 'active') throw keyNotFound(keyId);
    const secret = generateSecret(this.brand);
    const hash = hashSecret(secret);
    const ref = `${accountId}:${keyId}`;
    await this.claimLookup(hash, ref);
    const result = (await rotateKeyScript
      .run(
        this.redis,
        [keyHash],
        [hash, seal(this.kek, secret, sealAad(accountId, keyId)), lastFour(secret), new Date().toISOString()],
      )
      .catch(async (err) => {
        await this.redis.del(globalKeys.keyByHash(hash));
        throw err;
      })) as [string, string?];
    if (result[0] !== 'ok') {
      // Deleted between our check and the script: the key stays deleted and the new secret never existed.
      await this.redis.del(globalKeys.keyByHash(hash));
      throw keyNotFound(keyId);
    }
    if (result[1]) await retireSecretHash(this.redis, result[1], ref);
    const key = await this.get(accountId, keyId);
    return { key: key!, secret };
  }

  /** Delete Key (KEY-6): soft and final. Deleting an already deleted key is a no-op. */
  async delete(accountId: string, keyId: string): Promise<void> {
    if ((await softDeleteKey(this.redis, accountId, keyId)) === 'not_found') throw keyNotFound(keyId);
  }

  /**
   * The proxy's check. Never trims: a secret with whitespace, control or non-ASCII characters, or of
   * an impossible length, is refused without a Redis round trip (AUTH-5).
   */
  async authenticate(secret: string): Promise<AuthenticatedKey | null> {
    if (!isWellFormedSecret(secret)) return null;
    const secretHash = hashSecret(secret);
    const ref = await this.redis.get(globalKeys.keyByHash(secretHash));
    if (ref === null) return null;
    // Key ids never contain ':'; account ids might, so split at the last one.
    const sep = ref.lastIndexOf(':');
    if (sep <= 0) return null;
    const accountId = ref.slice(0, sep);
    const keyId = ref.slice(sep + 1);
    const [status, storedHash, spendLimit, ...limits] = await this.redis.hmget(
      accountKeys(accountId).key(keyId),
      'status',
      'hash',
      'spendLimit',
      ...RATE_LIMIT_HASH_FIELDS,
    );
    if (status !== 'active' || storedHash !== secretHash) return null;
    return {
      accountId,
      keyId,
      secretHash,
      spendLimit: parseSpendLimit(spendLimit),
      rateLimits: parseRateLimits(limits),
    };
  }

  private async claimLookup(hash: string, ref: string): Promise<void> {
    const claimed = await this.redis.set(globalKeys.keyByHash(hash), ref, 'NX');
    // Only an imported secret can collide; 24 random bytes do not.
    if (claimed === null) throw invalidRequest('secret is already in use by another key', 'secret');
  }

  /** Returns null only when onlyIfFirst and the account already had a key. */
  private async insert(accountId: string, input: InsertInput): Promise<ApiKeyRecord | null> {
    const { name, nameKey } = validateKeyName(input.name);
    const spendLimit = validateSpendLimit(input.spendLimit ?? null);
    const spendWindow = validateSpendWindow(input.spendWindow ?? DEFAULT_BUDGET_WINDOW);
    const k = accountKeys(accountId);
    const keyId = newId('key');
    const hash = hashSecret(input.secret);
    const record: ApiKeyRecord = {
      id: keyId,
      accountId,
      name,
      createdAt: new Date().toISOString(),
      createdBy: input.createdBy,
      status: 'active',
      format: this.pattern.test(input.secret) ? 'current' : 'legacy',
      last4: lastFour(input.secret),
      rotatedAt: null,
      deletedAt: null,
      spendLimit,
      spendWindow,
      rateLimits: NO_RATE_LIMITS,
    };
    const fields: Record<string, string> = {
      id: record.id,
      accountId,
      name,
      nameKey,
      createdAt: record.createdAt,
      status: record.status,
      format: record.format,
      last4: record.last4,
      hash,
      sealed: seal(this.kek, input.secret, sealAad(accountId, keyId)),
    };
    if (record.createdBy) fields.createdBy = record.createdBy;
    if (spendLimit !== null) fields.spendLimit = String(spendLimit);
    if (spendLimit !== null && spendWindow !== DEFAULT_BUDGET_WINDOW) fields.spendWindow = spendWindow;
    await this.claimLookup(hash, `${accountId}:${keyId}`);
    let outcome: unknown;
    try {
      outcome = await createKeyScript.run(
        this.redis,
        [k.keys, k.key(keyId), k.keyNames, k.hadKey],
        [keyId, nameKey, input.onlyIfFirst ? '1' : '0', ...Object.entries(fields).flat()],
      );
    } finally {
      if (outcome !== 'ok') await this.redis.del(globalKeys.keyByHash(hash));
    }
    if (outcome === 'had_key') return null;
    if (outcome === 'name_taken') {
      throw nameTaken(name);
    }
    return record;
  }
}

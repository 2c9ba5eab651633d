// Key lookups cached in this replica's memory, keyed by the secret's SHA-256 (the plain secret is
// never kept: hashing costs ~1% of proxy CPU, a heap dump holding every live key would cost more).
// Valid and invalid answers are both cached for `ttlMs`, so a brute force of wrong keys cannot
// hammer Redis; invalid answers are capped in number so it cannot fill memory either.
// Rotate and delete publish the dead secret's hash: `invalidate` drops it at once and aborts every
// in-flight request (open streams included) that authenticated with it (SPEC KEY-5). A change of a
// live key's settings (its spend limit) publishes its hash too, on another channel: `refresh` drops
// the cached answer only, and the key's running requests go on.
import { hashSecret } from '../../core/keys/index.ts';
import { isRedisUnavailable } from '../../core/redis/unavailable.ts';

export interface Principal {
  accountId: string;
  keyId: string;
  secretHash: string;
  /** The account's billing currency; null when unset (403 billing_currency_unset). */
  currency: string | null;
  /** Lowercased ids of invite-only models granted to the account. */
  grants: ReadonlySet<string>;
  /**
   * The key's monthly spend limit (nano) or null. The scripts enforce it from Redis whatever this
   * says; the proxy reads it to hold per call (reserve first) for a limited key.
   */
  spendLimit: number | null;
  /**
   * The key is held to a rate limit (its own or the account's default; issue 34): its calls reserve
   * per call, so the reserve script takes their share of the windows. The script reads the limits
   * from Redis whatever this says.
   */
  rateLimited?: boolean;
  /**
   * The account has a budget across its keys (issue 34): every call reserves per call, so the
   * reserve script holds it to the budget (a lease would hold the account's money unbounded).
   */
  accountBudget?: boolean;
  /**
   * How long (ms) a call the key's calls-at-once limit refuses waits in this proxy for a slot
   * instead of a 429: the account's `concurrencyQueueSeconds` (issue 48 item 3); 0 or absent: none.
   */
  slotWaitMs?: number;
}

/**
 * How long past its expiry a valid answer still serves while Redis cannot be asked (issue 38). A
 * key's hash (`mp:keyhash:*`) lives on one Redis Cluster shard: without this, the accounts whose
 * keys hash there failed with that shard's outage though their own shard was healthy. A rotate or
 * delete drops the entry at once (and needs that shard to be written at all), so what is kept is a
 * key nobody changed; past this bound the lookup's error is the answer again.
 */
export const STALE_WHILE_UNAVAILABLE_MS = 60_000;

export type PrincipalLookup = (secret: string) => Promise<Principal | null>;

export interface KeyCacheOptions {
  lookup: PrincipalLookup;
  ttlMs: number;
  /** Cap on cached invalid answers; the oldest go first. */
  maxNegative?: number;
  now?: () => number;
}

interface Entry {
  principal: Principal | null;
  expires: number;
}

export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<Principal | null>>();
  private readonly inFlight = new Map<string, Set<KeyLease>>();
  private negatives = 0;
  /** Bumped on every invalidation: a lookup that raced one is redone, never cached stale. */
  private epoch = 0;
  private readonly now: () => number;
  private readonly maxNegative: number;

  constructor(private readonly options: KeyCacheOptions) {
    this.now = options.now ?? Date.now;
    this.maxNegative = options.maxNegative ?? 10_000;
  }

  async resolve(secret: string): Promise<Principal | null> {
    const hash = hashSecret(secret);
    const hit = this.entries.get(hash);
    if (hit && hit.expires > this.now()) return hit.principal;
    // Concurrent misses for one secret share a single Redis lookup.
    let p = this.pending.get(hash);
    if (!p) {
      p = this.lookup(hash, secret).finally(() => this.pending.delete(hash));
      this.pending.set(hash, p);
    }
    return p;
  }

  private async lookup(hash: string, secret: string): Promise<Principal | null> {
    for (;;) {
      const epoch = this.epoch;
      let principal: Principal | null;
      try {
        principal = await this.options.lookup(secret);
      } catch (err) {
        const stale = this.entries.get(hash);
        if (
          stale?.principal &&
          isRedisUnavailable(err) &&
          this.now() - stale.expires < STALE_WHILE_UNAVAILABLE_MS
        )
          return stale.principal;
        throw err;
      }
      if (epoch !== this.epoch) continue; // an invalidation landed meanwhile: ask again
      this.store(hash, principal);
      return principal;
    }
  }

  private store(hash: string, principal: Principal | null): void {
    this.remove(hash);
    if (this.options.ttlMs <= 0) return;
    if (principal === null) {
      if (this.negatives >= this.maxNegative) this.evictOldestNegative();
      this.negatives++;
    }
    this.entries.set(hash, { principal, expires: this.now() + this.options.ttlMs });
  }

  private remove(hash: string): void {
    const old = this.entries.get(hash);
    if (!old) return;
    if (old.principal === null) this.negatives--;
    this.entries.delete(hash);
  }

  private evictOldestNegative(): void {
    // Map iteration is insertion order: the first invalid entry is the oldest.
    for (const [hash, e] of this.entries) {
      if (e.principal === null) {
        this.remove(hash);
        return;
      }
    }
  }

  /** The secret with this hash stopped working: forget it and fail its in-flight requests. */
  invalidate(secretHash: string): void {
    this.epoch++;
    this.remove(secretHash);
    this.pending.delete(secretHash);
    const leases = this.inFlight.get(secretHash);
    if (!leases) return;
    this.inFlight.delete(secretHash);
    for (const lease of leases) lease.kill(new KeyInvalidatedError());
  }

  /**
   * The key with this secret hash changed (its spend limit) but still works: forget the cached
   * answer so the next request reads it again; in-flight requests go on. Racing lookups are redone.
   */
  refresh(secretHash: string): void {
    this.epoch++;
    this.remove(secretHash);
    this.pending.delete(secretHash);
  }

  /**
   * The account's currency or grants changed: drop its cached principals (the keys stay valid, so
   * in-flight requests go on) and redo racing lookups.
   */
  forgetAccount(accountId: string): void {
    this.epoch++;
    for (const [hash, e] of this.entries) {
      if (e.principal?.accountId === accountId) this.remove(hash);
    }
  }

  /** After a lost pub/sub connection any invalidation may have been missed: start over. */
  clear(): void {
    this.epoch++;
    this.entries.clear();
    this.pending.clear();
    this.negatives = 0;
  }

  /** Registers a request made with `secretHash`; its lease dies if the secret does. */
  track(secretHash: string): KeyLease {
    let set = this.inFlight.get(secretHash);
    if (!set) {
      set = new Set();
      this.inFlight.set(secretHash, set);
    }
    const lease = new KeyLease(this.inFlight, secretHash);
    set.add(lease);
    return lease;
  }

  /** In-flight requests currently tracked (metrics, tests). */
  trackedCount(): number {
    let n = 0;
    for (const s of this.inFlight.values()) n += s.size;
    return n;
  }
}

/**
 * One request's hold on its key. Cheaper than an AbortController per request (they showed in
 * profiles): the request's Cancel (request-abort.ts) is linked through `onDead`.
 */
export class KeyLease {
  /** Set once the key died. */
  reason: KeyInvalidatedError | null = null;
  /** Called once when the key dies (set by whoever must stop then); null to unlink. */
  onDead: ((reason: KeyInvalidatedError) => void) | null = null;

  constructor(
    private readonly inFlight: Map<string, Set<KeyLease>>,
    private readonly hash: string,
  ) {}

  kill(reason: KeyInvalidatedError): void {
    if (this.reason !== null) return;
    this.reason = reason;
    const f = this.onDead;
    this.onDead = null;
    f?.(reason);
  }

  /** The request is over (idempotent). */
  untrack(): void {
    const s = this.inFlight.get(this.hash);
    if (!s?.delete(this) || s.size > 0) return;
    this.inFlight.delete(this.hash);
  }
}

/** The abort reason when a request's key was rotated or deleted while it ran. */
export class KeyInvalidatedError extends Error {
  constructor() {
    super('The API key used for this request was rotated or deleted.');
    this.name = 'KeyInvalidatedError';
  }
}

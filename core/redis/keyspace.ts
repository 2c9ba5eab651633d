// Every Redis key of one account shares the hash tag `{a:<id>}` so each atomic script touches one
// slot and the same scripts run on Redis Cluster. Global keys (indexes, catalogue) start with `mp:`.
import { keyPerSlotBlock, slotBlockOf } from './slot-blocks.ts';

export const accountTag = (accountId: string) => `{a:${accountId}}`;

/** The hold sweeper's expiry indexes (see globalKeys.holdsDue). */
const HOLDS_DUE = keyPerSlotBlock((n) => `mp:holds:due:{${n}}`);
/** Releases before the per-block indexes filed every hold here; still swept, so an upgrade strands none. */
const HOLDS_DUE_BEFORE_BLOCKS = 'mp:holds:due';

export const accountKeys = (accountId: string) => {
  const t = accountTag(accountId);
  return {
    /** hash: name, country, createdAt, balance (nano), held (nano, sum of the holds hash) */
    account: `${t}:account`,
    /** hash holdId → held amount (nano) */
    holds: `${t}:holds`,
    /** zset holdId → expiry (ms since epoch, Redis time; renewed by the hold's owner) */
    holdExpiry: `${t}:holds:exp`,
    /**
     * string per finished operation (`settle:<holdId>`, `charge:<id>`, `refund:<id>`, `topup:<id>`)
     * → its result, for exactly-once metering. One expiring key per operation rather than one hash,
     * so the record of finished operations cannot grow forever (Redis 7.0 has no per-field TTL).
     */
    done: (opId: string) => `${t}:done:${opId}`,
    /** string per refunded charge op id → total refunded so far (a charge's refunds never exceed it) */
    refunded: (opId: string) => `${t}:refunded:${opId}`,
    /** stream of every charge, refund, top-up and void: the audit trail (the ledger) */
    usage: `${t}:usage`,
    /** string: the console's low-balance alert, in nano-units of the account currency (console/routes/balance-alert.ts) */
    balanceAlert: `${t}:balance-alert`,
    /** hash per hour bucket: `<keyId>|<model>|<metric>` → integer */
    rollup: (hourBucket: string) => `${t}:rollup:${hourBucket}`,
    /** zset of hour buckets that have rollups (score = hour start ms) */
    rollupHours: `${t}:rollup:hours`,
    /** set of key ids */
    keys: `${t}:keys`,
    /** hash: one API key record (`spendLimit`: the key's monthly spend limit in nano, absent = none) */
    key: (keyId: string) => `${t}:key:${keyId}`,
    /**
     * hash of what the account's keys spend, for their monthly spend limits (core/billing/key-spend.ts),
     * written by the metering scripts in the same step as the balance:
     * - `spent:<keyId>:<YYYYMM>` → net charged by that key in that UTC month (charges − refunds), by
     *   the report clock the rollups use. Every key is counted, limited or not, so a limit set
     *   mid-month counts what the key already spent that month.
     * - `held:<keyId>` → the sum of the open holds of a key that has a limit (absent = 0);
     * - `h:<holdId>` → the limited key that hold belongs to, so its settle, release or void takes its
     *   share off `held:<keyId>`.
     * - the account's own spend across its keys, for its budget, as a key named `*`: `spent:*:<period>`
     *   (every keyed charge), `held:*` and `ah:<holdId>` (holds made under the account's budget).
     * One hash per account rather than keys per key: every script that charges already touches the
     * account's slot, and this adds one key to each, not one per key id.
     */
    keySpend: `${t}:keyspend`,
    /** hash lower(name) → keyId of active keys (name uniqueness) */
    keyNames: `${t}:keynames`,
    /** hash userId → role (owner, member): the account's team (core/accounts/team.ts) */
    team: `${t}:team`,
    /** hash invitationId → sha256 of its token (pending invitations, core/accounts/team.ts) */
    invitations: `${t}:invitations`,
    /** set of lowercased model ids granted (invite-only access) */
    grants: `${t}:grants`,
    /**
     * zset videoId → its place in creation order: max(created ms × 1000, the last place + 1), so
     * jobs created in one millisecond keep the order they were made in (never the ids' order).
     */
    videos: `${t}:videos`,
    /** string: the last place given in `videos` (deletions never lower it) */
    videoSeq: `${t}:videos:seq`,
    /** zset videoId → place of deleted jobs (the newest 1000): a list can go on after one */
    videosDeleted: `${t}:videos:deleted`,
    video: (videoId: string) => `${t}:video:${videoId}`,
    /** string flag: the account has had a key (ensureDefaultKey mints only once) */
    hadKey: `${t}:hadkey`,
    /** zset top-up request id → created ms (core/payments: the account's requests, newest last) */
    topUps: `${t}:topups`,
    /** hash: one top-up request (amount, provider, status, who decided, the Stripe session) */
    topUp: (requestId: string) => `${t}:topup:${requestId}`,
    /** hash: auto top-up's settings, saved card, crossing marker and last attempt (core/payments/auto-topup-store.ts) */
    autoTopUp: `${t}:auto-topup`,
    /** zset caller's charge id → ms: the service ledger's charges (written by the charge script) */
    serviceCharges: `${t}:svc:charges`,
    /** hash: one service ledger charge (amount, product, description): its answer to a repeated id */
    serviceCharge: (chargeId: string) => `${t}:svc:charge:${chargeId}`,
    /** hash: one service ledger refund (amount, the charge, description) */
    serviceRefund: (refundId: string) => `${t}:svc:refund:${refundId}`,
    /** string per call (expiring, core/usage/call-facts.ts): its status, latency, TTFT and finish reason */
    callFact: (requestId: string) => `${t}:fact:${requestId}`,
    /** stream of calls refused at the door (capped, expiring; core/usage/call-facts.ts): nothing charged */
    refused: `${t}:refused`,
    /** hash keyId → ms of the key's last call, delivered or refused (core/usage/call-facts.ts) */
    keyLastUsed: `${t}:key-last-used`,
  };
};

export const globalKeys = {
  /** set of all account ids */
  accounts: 'mp:accounts',
  /** string per secret hash: `<accountId>:<keyId>` */
  keyByHash: (sha256hex: string) => `mp:keyhash:${sha256hex}`,
  /** string per hash of a rotated-away or deleted secret: blocks importing it again (KEY-6) */
  retiredKeyHash: (sha256hex: string) => `mp:keyhash-retired:${sha256hex}`,
  /** counter per announcement nonce (expiring): how many receivers applied it (core/redis/announce.ts) */
  announceAcks: (nonce: string) => `mp:announce-acks:${nonce}`,
  /** hash lower(model id) → catalogue entry JSON */
  catalogue: 'mp:catalogue',
  /**
   * string: the newest leadership term that wrote the catalogue (core/catalogue/fence.ts). Its hash
   * tag is the catalogue key's whole name, so both sit in one slot and one script reads the fence
   * and writes the catalogue on Redis Cluster too.
   */
  catalogueFence: '{mp:catalogue}:fence',
  /** users: email → userId, and user hashes */
  userByEmail: (email: string) => `mp:user-email:${email.toLowerCase()}`,
  user: (userId: string) => `mp:user:${userId}`,
  /** hash accountId → role: the accounts a user belongs to (the other side of `{a}:team`) */
  userAccounts: (userId: string) => `mp:user-accounts:${userId}`,
  /** hash: a pending invitation, by sha256 of its link's token (expiring) */
  invitation: (tokenSha256: string) => `mp:invite:${tokenSha256}`,
  /**
   * zset `<accountId> <holdId>` → when the sweeper should look at that hold (ms). Written before a
   * hold or lease is made, so no hold exists that the sweeper cannot find; the sweeper judges each
   * by Redis time in the account's own script and re-files live ones (core/billing/sweeper.ts).
   * One index per block of 256 slots, an account's entries in its own block's: on Redis Cluster
   * the index an account writes sits (almost always) on the primary that holds the account, so a
   * primary's failover stalls only its own accounts' holds, not every account's.
   */
  holdsDue: (accountId: string) => HOLDS_DUE[slotBlockOf(accountTag(accountId))]!,
  /** Every expiry index the sweeper reads: one per block, and the one of releases before them. */
  holdsDueAll: (): readonly string[] => [...HOLDS_DUE, HOLDS_DUE_BEFORE_BLOCKS],
  /** string: the token of the replica that runs the hold sweeper (a lock with a ttl) */
  sweeperLock: 'mp:sweeper:leader',
  /** The journal keeper's leader lock (core/journal/keeper.ts: the archiver and the reconciler). */
  journalLock: 'mp:journal:leader',
  /** zset object key → when the media sweeper deletes it (ms): images past their URL, videos past retention */
  mediaDue: 'mp:media:due',
  /** string: the token of the replica that runs the media sweeper */
  mediaSweeperLock: 'mp:media:sweeper:leader',
  /**
   * zset `<accountId> <videoId>` → when a poller should next look at that job (ms). A claim moves
   * it into the future by VIDEO_CLAIM_MS; videoClaims holds who claimed it. One hash tag, so the
   * claim script is one slot on Redis Cluster too.
   */
  videosActive: '{mp:videos}:active',
  /** hash `<accountId> <videoId>` → the claiming replica's token */
  videoClaims: '{mp:videos}:claims',
  /** console sessions: hash userId, accountId, csrf (expiring) */
  /** A console session, by the SHA-256 of its id (console/sessions.ts). */
  session: (sessionIdHash: string) => `mp:session:${sessionIdHash}`,
  /** console: failed sign-ins in the current window, per (email, client address) and per client address (expiring) */
  signInFailures: (what: 'email-addr' | 'addr', value: string) => `mp:signin-fail:${what}:${value}`,
  /** string per top-up request id → its account id (`modelplane topups approve <id>` has only the id) */
  topUpAccount: (requestId: string) => `mp:topup-account:${requestId}`,
  /** zset `<accountId> <requestId>` → created ms: top-up requests waiting for a decision */
  topUpsPending: 'mp:topups:pending',
  /** set of account ids with auto top-up on: what the auto top-up checker walks */
  autoTopUpAccounts: 'mp:auto-topup:accounts',
  /**
   * Demand for capacity (core/demand/demand.ts, issue 32): a hash per proxy replica, model id → its
   * `inFlight queued held` counts, expiring a few publish intervals after its last write (a dead
   * replica's demand goes away by itself), and a set of the replicas that published. One hash tag,
   * so a publish is one MULTI on Redis Cluster too.
   */
  demandOf: (proxyId: string) => `{mp:demand}:p:${proxyId}`,
  demandProxies: '{mp:demand}:proxies',
  /** string per Stripe event id handled (expiring): a webhook delivered again is answered at once */
  stripeEvent: (eventId: string) => `mp:stripe-event:${eventId}`,
} as const;

/**
 * Pub/sub channels. The key and account channels carry `<nonce> <payload>` (core/redis/announce.ts): each
 * receiver acknowledges, and the change returns only once every receiver applied it.
 */
export const channels = {
  /** payload: sha256 hex of a secret that stopped working (rotate/delete) */
  keyInvalidated: 'mp:keys:invalidated',
  /** payload: lowercased model id that changed, or '*' */
  catalogueChanged: 'mp:catalogue:changed',
  /**
   * payload: sha256 hex of a secret whose key's settings changed (its spend limit): proxies drop the
   * cached lookup so the next request sees the change. Unlike keyInvalidated the key still works, so
   * in-flight requests made with it go on.
   */
  keyChanged: 'mp:keys:changed',
  /** payload: account id whose currency or model grants changed (proxies drop cached views) */
  accountChanged: 'mp:accounts:changed',
  /**
   * payload `<accountId> <nonce> <leaseId>`: a replica near the account's limit asks the others to
   * give back the unused part of their leases on it; each answers on leaseShrunk with the nonce.
   */
  leaseShrink: 'mp:leases:shrink',
  leaseShrunk: 'mp:leases:shrunk',
} as const;

/** An expiry index's member for one hold (see globalKeys.holdsDue). Account ids hold no space. */
export const dueMember = (accountId: string, holdId: string) => `${accountId} ${holdId}`;

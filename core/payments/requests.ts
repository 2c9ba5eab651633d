// Top-up requests: what an account asked to top up, through which provider, and where it stands.
// The amount is recorded here, server-side, when the request is made; whatever later credits the
// request (a Stripe webhook, an operator's approval) credits this amount and nothing a browser
// sends. A request moves pending → approved → credited, or pending → rejected; each move is one
// script on the request's hash, so two deciders (an approve racing a reject, two webhook
// deliveries) cannot both win. The request's hash and the account's list share the account's hash
// tag; the two global indexes (id → account, the approval queue) are written before the hash, so
// a request that exists can always be found, like the sweeper's index of holds.

import { newId } from '../ids.ts';
import { perItem, type Redis } from '../redis/client.ts';
import { accountKeys, globalKeys } from '../redis/keyspace.ts';
import { LuaScript } from '../redis/lua.ts';

export type ProviderName = 'stripe' | 'approval';
export const PROVIDER_NAMES = ['stripe', 'approval'] as const satisfies readonly ProviderName[];

export type TopUpStatus = 'pending' | 'approved' | 'rejected' | 'credited';

export interface TopUpRequest {
  id: string;
  accountId: string;
  /** nano-units of `currency` */
  amount: number;
  /** The account's currency when the request was made. */
  currency: string;
  provider: ProviderName;
  status: TopUpStatus;
  createdAt: string;
  /** The console user who asked (null when made otherwise). */
  createdBy: string | null;
  /** When and by whom it was approved or rejected (`stripe`, `cli:<user>`, ...). */
  decidedAt: string | null;
  decidedBy: string | null;
  creditedAt: string | null;
  /** Stripe: the Checkout Session paying for it. */
  checkoutSessionId: string | null;
  /** Why it was closed without credit, when it was (an expired checkout, a provider failure). */
  reason: string | null;
}

/**
 * KEYS: request hash. ARGV: next status, n, n allowed current statuses, then field/value pairs.
 * Returns {'ok', previous} when moved, {'refused', current} when the request is elsewhere, {'missing'}.
 */
const moveScript = new LuaScript(
  `
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then return {'missing'} end
local n = tonumber(ARGV[2])
for i = 3, 2 + n do
  if cur == ARGV[i] then
    redis.call('HSET', KEYS[1], 'status', ARGV[1], unpack(ARGV, 3 + n))
    return {'ok', cur}
  end
end
return {'refused', cur}
`,
  'topup_move',
);

export type MoveResult =
  | { moved: true; request: TopUpRequest }
  | { moved: false; request: TopUpRequest | null };

export class TopUpRequests {
  constructor(
    private readonly redis: Redis,
    private readonly now: () => number = Date.now,
  ) {}

  async create(a: {
    accountId: string;
    amount: number;
    currency: string;
    provider: ProviderName;
    createdBy: string | null;
    /** Given when the cause names it (an auto top-up's crossing); else a new one. */
    id?: string;
  }): Promise<TopUpRequest> {
    const id = a.id ?? newId('topup');
    const at = this.now();
    const k = accountKeys(a.accountId);
    // The indexes first (see the file's head): `topups approve <id>` finds it by id alone, and an
    // approval request is in the operators' queue from the moment it exists.
    await this.redis.set(globalKeys.topUpAccount(id), a.accountId);
    if (a.provider === 'approval')
      await this.redis.zadd(globalKeys.topUpsPending, at, pendingMember(a.accountId, id));
    const request: TopUpRequest = {
      id,
      accountId: a.accountId,
      amount: a.amount,
      currency: a.currency,
      provider: a.provider,
      status: 'pending',
      createdAt: new Date(at).toISOString(),
      createdBy: a.createdBy,
      decidedAt: null,
      decidedBy: null,
      creditedAt: null,
      checkoutSessionId: null,
      reason: null,
    };
    await this.redis.multi().hset(k.topUp(id), toHash(request)).zadd(k.topUps, at, id).exec();
    return request;
  }

  async get(accountId: string, id: string): Promise<TopUpRequest | null> {
    return fromHash(await this.redis.hgetall(accountKeys(accountId).topUp(id)));
  }

  /** A request by its id alone (the CLI's approve and reject). */
  async find(id: string): Promise<TopUpRequest | null> {
    const accountId = await this.redis.get(globalKeys.topUpAccount(id));
    return accountId === null ? null : this.get(accountId, id);
  }

  /** The account's requests, newest first. */
  async list(accountId: string, limit = 100): Promise<TopUpRequest[]> {
    const ids = await this.redis.zrevrange(accountKeys(accountId).topUps, 0, limit - 1);
    return this.load(ids.map((id) => ({ accountId, id })));
  }

  /** Approval requests waiting for an operator, oldest first (optionally of one account). */
  async pending(accountId?: string): Promise<TopUpRequest[]> {
    const members = await this.redis.zrange(globalKeys.topUpsPending, 0, -1);
    const refs = members
      .map((m) => {
        const [acct = '', id = ''] = m.split(' ');
        return { accountId: acct, id };
      })
      .filter((r) => accountId === undefined || r.accountId === accountId);
    // A decision drops its member after moving the request; one left by a crash in between is
    // skipped here and dropped.
    const found = await this.load(refs);
    const stale = refs.filter((r) => !found.some((f) => f.id === r.id && f.status === 'pending'));
    if (stale.length > 0)
      await this.redis.zrem(globalKeys.topUpsPending, ...stale.map((r) => pendingMember(r.accountId, r.id)));
    return found.filter((r) => r.status === 'pending');
  }

  /** An auto top-up's payment intent, for whoever looks the request up at Stripe. */
  async setPaymentIntent(accountId: string, id: string, intentId: string): Promise<void> {
    await this.redis.hset(accountKeys(accountId).topUp(id), 'paymentIntentId', intentId);
  }

  async setCheckoutSession(accountId: string, id: string, sessionId: string): Promise<void> {
    await this.redis.hset(accountKeys(accountId).topUp(id), 'checkoutSessionId', sessionId);
  }

  /**
   * Moves the request to `to` if it is in one of `from`, setting `fields` with it, atomically.
   * Not moved: the request as it stands (null when there is none).
   */
  async move(
    accountId: string,
    id: string,
    from: readonly TopUpStatus[],
    to: TopUpStatus,
    fields: Partial<Record<'decidedAt' | 'decidedBy' | 'creditedAt' | 'reason', string>> = {},
  ): Promise<MoveResult> {
    const r = (await moveScript.run(
      this.redis,
      [accountKeys(accountId).topUp(id)],
      [to, from.length, ...from, ...Object.entries(fields).flat()],
    )) as string[];
    const request = await this.get(accountId, id);
    // Out of the operators' queue once decided (a failure here is cleaned up by pending()).
    if (request !== null && request.status !== 'pending')
      await this.redis.zrem(globalKeys.topUpsPending, pendingMember(accountId, id)).catch(() => {});
    return r[0] === 'ok' && request !== null ? { moved: true, request } : { moved: false, request };
  }

  private async load(refs: { accountId: string; id: string }[]): Promise<TopUpRequest[]> {
    if (refs.length === 0) return [];
    const res = await perItem(this.redis, refs, (p, r) => p.hgetall(accountKeys(r.accountId).topUp(r.id)));
    const out: TopUpRequest[] = [];
    for (const [err, h] of res) {
      if (err) throw err;
      const request = fromHash(h as Record<string, string>);
      if (request) out.push(request);
    }
    return out;
  }
}

const pendingMember = (accountId: string, id: string) => `${accountId} ${id}`;

function toHash(r: TopUpRequest): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(r)) if (v !== null) h[k] = String(v);
  return h;
}

function fromHash(h: Record<string, string>): TopUpRequest | null {
  if (!h.id || !h.accountId || !h.status) return null;
  return {
    id: h.id,
    accountId: h.accountId,
    amount: Number(h.amount ?? 0),
    currency: h.currency ?? '',
    provider: h.provider as ProviderName,
    status: h.status as TopUpStatus,
    createdAt: h.createdAt ?? '',
    createdBy: h.createdBy ?? null,
    decidedAt: h.decidedAt ?? null,
    decidedBy: h.decidedBy ?? null,
    creditedAt: h.creditedAt ?? null,
    checkoutSessionId: h.checkoutSessionId ?? null,
    reason: h.reason ?? null,
  };
}

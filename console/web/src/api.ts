// The console server's JSON API (console/routes), with the session's CSRF token on every call that
// needs it. Money arrives as decimal strings in the account currency.
export type Role = 'owner' | 'member';

export interface Me {
  signedIn: true;
  user: { id: string; email: string };
  account: { id: string; name: string; country: string | null; currency: string | null; role: Role };
  accounts: { id: string; name: string; role: Role }[];
  csrfToken: string;
  apiBaseUrl: string;
  messagesBaseUrl: string;
  /** The console keeps calls one by one (a durable journal): the usage page lists them. */
  usageHistory: boolean;
}

export interface KeyRow {
  id: string;
  name: string;
  key: string;
  createdAt: string;
  spendLimit?: string | null;
  monthSpend?: string;
  /** The spend limit's window and the key's spend in its current period (issue 34). */
  spendWindow?: BudgetWindow;
  windowSpend?: string;
  /** Made by the signed-in user (a member acts only on these). */
  mine?: boolean;
  /** When the key last made a call; null: none recorded. */
  lastUsedAt?: string | null;
}

export type BudgetWindow = 'day' | 'week' | 'month';
export type RateLimitName =
  | 'requestsPerMinute'
  | 'inputTokensPerMinute'
  | 'outputTokensPerMinute'
  | 'concurrentCalls';
export type RateLimitValues = Record<RateLimitName, number | null>;

/** GET /api/account/limits (console/routes/account-limits.ts): the budget across all keys. */
export interface AccountLimits {
  rateLimits: RateLimitValues;
  budget: { limit: string | null; window: BudgetWindow; spent: string; resetsAt: string };
}

/** GET /api/keys/:id/limits (console/routes/key-limits.ts). */
export interface KeyLimits {
  keyId: string;
  rateLimits: RateLimitValues;
  accountDefaults: RateLimitValues;
  effective: RateLimitValues;
  /** What the key has taken of each limit now (requests and tokens in its buckets, calls running). */
  use: Record<RateLimitName, number>;
  budget: { spendLimit: string | null; spendWindow: BudgetWindow; spent: string; resetsAt: string };
}

// The usage table's rows as the console server makes them (type-only: nothing of the server is bundled).
import type { UsageGroup, UsageTableRow as UsageRow } from '../../usage-table.ts';

export type { UsageGroup, UsageRow };
export interface UsageQuery {
  from: number;
  to: number;
  keyId?: string;
  group: UsageGroup;
}

/** One transfer of a call from the journal (GET /api/usage/calls): its charge, refunds, a void. */
/** The low-balance alert (console/routes/balance-alert.ts). */
/** Auto top-up (GET/PUT /billing/auto-topup): a saved card charged when the balance falls below a threshold. */
export interface AutoTopUp {
  available: boolean;
  currency: string | null;
  enabled: boolean;
  threshold: string | null;
  amount: string | null;
  monthlyCap: number | null;
  card: { brand: string; last4: string } | null;
  paused: string | null;
  failures: number;
  thisMonth: number;
  last: { id: string; at: string; status: string; amount: string; reason: string | null } | null;
}

export interface BalanceAlert {
  currency: string | null;
  threshold: string | null;
  available: string;
  below: boolean;
}

export interface CallTransfer {
  id: string;
  requestId: string | null;
  at: string;
  type: 'charge' | 'refund' | 'void' | 'topup';
  keyId: string | null;
  keyName: string | null;
  keyState: 'active' | 'rotated' | 'deleted' | null;
  model: string | null;
  kind: string | null;
  inputTokens: number | null;
  cachedTokens: number | null;
  outputTokens: number | null;
  images: number | null;
  videoSeconds: number | null;
  cost: string | null;
  amount: string;
  currency: string | null;
  refundOf: string | null;
  reason: string | null;
  /** What the call did besides its money (issue 37 item 7); null when not kept (30 days). */
  status?: number | null;
  latencyMs?: number | null;
  ttftMs?: number | null;
  finishReason?: string | null;
}

/** A call refused at the door: never charged (GET /api/usage/refused). */
export interface RefusedCall {
  requestId: string;
  at: string;
  status: number;
  code: string;
  latencyMs: number;
  keyId: string | null;
  keyName: string | null;
  model: string | null;
  route: string;
  cost: '0';
}

export interface CallsQuery {
  from: number;
  to: number;
  keyId?: string;
  cursor?: string;
  limit?: number;
}

export interface PricedModel {
  id: string;
  kind: string;
  availability: string;
  callable: boolean;
  contextLength: number | null;
  /** The most output tokens a call may ask for (its output limit, else its context length). */
  maxOutputTokens: number | null;
  price: Record<string, string>;
  capabilities: { tools: boolean; vision: boolean; reasoning: boolean; edit: boolean; imageToVideo: boolean };
}

export interface Balance {
  currency: string | null;
  balance: string;
  held: string;
  available: string;
}

export interface Ledger {
  currency: string | null;
  topUps: { id: string; at: string; amount: string; note: string; source: string }[];
  charges: { day: string; model: string; requests: number; amount: string }[];
  refunds: { id: string; at: string; amount: string; of: string; model: string }[];
  service: { id: string; at: string; type: string; amount: string; description: string }[];
}

export interface TopUpRequest {
  id: string;
  provider: string;
  status: string;
  amount: string;
  createdAt: string;
  decidedAt?: string | null;
}

export type TopUpStart =
  | { provider: 'stripe'; url: string }
  | { provider: 'approval'; request: TopUpRequest };

export interface Profile {
  account: { id: string; name: string; country: string | null; currency: string | null };
  user: { email: string };
  countries: { code: string; currency: string }[];
}

export interface TeamView {
  members: { userId: string; email: string; role: Role; you: boolean }[];
  invitations: { id: string; email: string; role: Role; createdAt: string; expiresAt: string }[];
}

export interface InvitationOffer {
  accountName: string;
  email: string;
  role: Role;
  expiresAt: string;
  userExists: boolean;
}

/** One batch of either API (console/routes/batches.ts). */
export interface BatchRow {
  id: string;
  api: 'openai' | 'anthropic';
  endpoint: string;
  model: string | null;
  status: string;
  counts: { total: number; completed: number; failed: number; cancelled: number; expired: number };
  cost: string;
  currency: string | null;
  createdAt: string;
  expiresAt: string | null;
  endedAt: string | null;
  keyId: string | null;
  keyName: string | null;
  outputFile: boolean;
  errorFile: boolean;
  mayCancel: boolean;
}

/** A refused call: the server's message (it names the field), the code, and the field. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
    readonly param: string | null,
  ) {
    super(message);
  }
}

let csrf = '';
/** The session ended under the page (signed out elsewhere, removed from the account): back to sign-in. */
let onSignedOut: () => void = () => {};
export const whenSignedOut = (f: () => void) => {
  onSignedOut = f;
};

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`/api${path}`, {
    method,
    headers: {
      ...(csrf ? { 'x-csrf-token': csrf } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json().catch(() => ({}))) as {
    error?: { message?: string; code?: string; param?: string };
  };
  if (!res.ok) {
    if (res.status === 401 && path !== '/session') onSignedOut();
    throw new ApiError(
      json.error?.message ?? `The request failed (${res.status}).`,
      res.status,
      json.error?.code ?? null,
      json.error?.param ?? null,
    );
  }
  return json as T;
}

const remember = (me: Me) => {
  csrf = me.csrfToken;
  return me;
};

const query = (q: Record<string, string | number | undefined>) =>
  new URLSearchParams(
    Object.entries(q)
      .filter((e): e is [string, string | number] => e[1] !== undefined && e[1] !== '')
      .map(([k, v]) => [k, String(v)]),
  ).toString();

export const usageQueryString = (q: UsageQuery) => query({ ...q });

export const api = {
  async me(): Promise<Me | null> {
    const me = await call<Me | { signedIn: false }>('GET', '/session');
    return me.signedIn ? remember(me) : null;
  },
  signIn: async (email: string, password: string) =>
    remember(await call<Me>('POST', '/session', { email, password })),
  signOut: () => call('DELETE', '/session'),
  switchAccount: async (accountId: string) =>
    remember(await call<Me>('POST', '/session/account', { accountId })),

  keys: async () => (await call<{ data: KeyRow[] }>('GET', '/keys')).data,
  ensureDefault: () => call<{ minted: { key: KeyRow; secret: string } | null }>('POST', '/keys/default'),
  create: (name: string, spendLimit?: string) =>
    call<{ key: KeyRow; secret: string }>('POST', '/keys', spendLimit ? { name, spendLimit } : { name }),
  setLimit: (id: string, spendLimit: string | null) =>
    call<{ key: KeyRow }>('PATCH', `/keys/${id}`, { spendLimit }),
  rename: (id: string, name: string) => call<{ key: KeyRow }>('PATCH', `/keys/${id}`, { name }),
  limits: (id: string) => call<KeyLimits>('GET', `/keys/${id}/limits`),
  setLimits: (
    id: string,
    body: { rateLimits?: Partial<RateLimitValues>; spendLimit?: string | null; spendWindow?: BudgetWindow },
  ) => call<KeyLimits>('PUT', `/keys/${id}/limits`, body),
  accountLimits: () => call<AccountLimits>('GET', '/account/limits'),
  setAccountBudget: (budget: string | null, budgetWindow?: BudgetWindow) =>
    call<AccountLimits>('PUT', '/account/limits', budgetWindow ? { budget, budgetWindow } : { budget }),
  setAccountRateLimits: (rateLimits: Partial<RateLimitValues>) =>
    call<AccountLimits>('PUT', '/account/limits', { rateLimits }),
  show: async (id: string) => (await call<{ secret: string }>('GET', `/keys/${id}/secret`)).secret,
  rotate: (id: string) => call<{ key: KeyRow; secret: string }>('POST', `/keys/${id}/rotate`),
  remove: (id: string) => call('DELETE', `/keys/${id}`),

  usage: (q: UsageQuery) =>
    call<{ currency: string | null; rows: UsageRow[] }>('GET', `/usage?${usageQueryString(q)}`),
  refused: (q: Omit<CallsQuery, 'cursor'>) =>
    call<{ data: RefusedCall[] }>('GET', `/usage/refused?${query({ ...q })}`),
  calls: (q: CallsQuery) =>
    call<{ currency: string | null; data: CallTransfer[]; nextCursor: string | null }>(
      'GET',
      `/usage/calls?${query({ ...q })}`,
    ),
  callOf: (requestId: string) =>
    call<{ requestId: string; currency: string | null; transfers: CallTransfer[] }>(
      'GET',
      `/usage/calls/${encodeURIComponent(requestId)}`,
    ),
  pricing: () => call<{ currency: string | null; models: PricedModel[] }>('GET', '/pricing'),

  balance: () => call<Balance>('GET', '/billing'),
  ledger: (from: number, to: number) => call<Ledger>('GET', `/billing/ledger?${query({ from, to })}`),
  providers: () =>
    call<{ providers: string[]; currency: string | null; min: string; max: string; decimals: number | null }>(
      'GET',
      '/billing/providers',
    ),
  topUp: (amount: string, provider: string) =>
    call<TopUpStart>('POST', '/billing/topups', { amount, provider }),
  topUps: async () => (await call<{ data: TopUpRequest[] }>('GET', '/billing/topups')).data,

  profile: () => call<Profile>('GET', '/profile'),
  saveProfile: (p: { name?: string; country?: string | null }) => call<Profile>('PUT', '/profile', p),
  balanceAlert: () => call<BalanceAlert>('GET', '/billing/alert'),
  setBalanceAlert: (threshold: string | null) => call<BalanceAlert>('PUT', '/billing/alert', { threshold }),
  autoTopUp: () => call<AutoTopUp>('GET', '/billing/auto-topup'),
  setAutoTopUp: (s: { enabled: boolean; threshold: string; amount: string; monthlyCap: number }) =>
    call<AutoTopUp>('PUT', '/billing/auto-topup', s),
  saveCard: () => call<{ url: string }>('POST', '/billing/auto-topup/card'),

  batches: (after?: string) =>
    call<{ data: BatchRow[]; hasMore: boolean }>('GET', `/batches?${query({ after })}`),
  cancelBatch: (id: string) => call<BatchRow>('POST', `/batches/${encodeURIComponent(id)}/cancel`),

  team: () => call<TeamView>('GET', '/team'),
  invite: (email: string, role: Role) =>
    call<{ invitation: TeamView['invitations'][number]; link: string }>('POST', '/team/invitations', {
      email,
      role,
    }),
  withdraw: (id: string) => call('DELETE', `/team/invitations/${id}`),
  setRole: (userId: string, role: Role) => call('PATCH', `/team/members/${userId}`, { role }),
  removeMember: (userId: string, revokeKeys: boolean) =>
    call<{ revokedKeyIds: string[] }>('POST', `/team/members/${userId}/remove`, { revokeKeys }),

  invitation: (token: string) => call<InvitationOffer>('GET', `/invitations/${encodeURIComponent(token)}`),
  accept: async (token: string, password?: string) =>
    remember(
      await call<Me>('POST', '/invitations/accept', password === undefined ? { token } : { token, password }),
    ),
};

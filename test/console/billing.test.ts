// The billing page's backend (issue "Console" item 5): top-ups through Stripe Checkout — real
// sessions created at stripe-mock through the official SDK, real webhook payloads signed with the
// endpoint secret — and through operator approval with the CLI; the ledger of top-ups, charges by
// day and model, refunds and service charges; the service ledger API. Real Redis, the real console
// server over HTTP. Every money test ends with the ledger check.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext } from '../../cli/context.ts';
import { main } from '../../cli/main.ts';
import { buildConsoleApp } from '../../console/app.ts';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Team } from '../../core/accounts/team.ts';
import { Users } from '../../core/accounts/users.ts';
import { Metering } from '../../core/billing/index.ts';
import { type Config, loadConfig } from '../../core/config/index.ts';
import { TopUpRequests } from '../../core/payments/index.ts';
import { consoleCall, type Signed, signedIn } from '../helpers/console-client.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { type Delivery, deliverStripeEvent, paidSession } from '../helpers/stripe-events.ts';
import { startStripeMock, type TestStripeMock } from '../helpers/stripe-mock.ts';
import { type RecordingProxy, recordingProxy } from '../helpers/stripe-recorder.ts';

const PASSWORD = 'correct horse battery';
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('hex')}`;
const SERVICE_TOKEN = randomBytes(32).toString('hex');
const DAY_MS = 86_400_000;

let redis: TestRedis;
let stripeMock: TestStripeMock;
let stripeApi: RecordingProxy;
let app: FastifyInstance;
let origin: string;
let config: Config;

type Name = 'ann' | 'bob' | 'jun';
const people: Record<Name, { email: string; accountId: string }> = {
  ann: { email: '', accountId: '' },
  bob: { email: '', accountId: '' },
  jun: { email: '', accountId: '' },
};

beforeAll(async () => {
  [redis, stripeMock] = await Promise.all([startRedis(), startStripeMock()]);
  stripeApi = await recordingProxy(stripeMock.url);
  config = loadConfig({
    REDIS_URL: redis.url,
    MODELPLANE_KEK: randomBytes(32).toString('hex'),
    CONSOLE_PUBLIC_URL: 'http://console.test/',
    CONSOLE_PAYMENT_PROVIDERS: 'stripe, approval',
    STRIPE_SECRET_KEY: 'sk_test_modelplane',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_URL: stripeApi.url,
    CONSOLE_SERVICE_TOKEN: SERVICE_TOKEN,
  });
  const r = redis.client();
  const countries: Record<Name, string> = { ann: 'US', bob: 'US', jun: 'JP' };
  for (const name of ['ann', 'bob', 'jun'] as const) {
    const account = await new Accounts(r).create({ name, country: countries[name] });
    const email = `${name}-${randomBytes(3).toString('hex')}@example.com`;
    const user = await new Users(r).create({ email, password: PASSWORD, accountId: account.id });
    await new Team(r).add(account.id, user.id, 'owner');
    people[name] = { email, accountId: account.id };
  }
  app = await buildConsoleApp({ config, redis: r, logger: false });
  origin = await app.listen({ host: '127.0.0.1', port: 0 });
  // The CLI (topups approve) reads its Redis from the environment, as an operator's shell would.
  process.env.REDIS_URL = redis.url;
  process.env.MODELPLANE_KEK = randomBytes(32).toString('hex');
});
afterAll(async () => {
  await app?.close();
  await stripeApi?.close();
  await stripeMock?.stop();
  await redis?.stop();
});

const session = (name: Name, base = origin) => signedIn(base, people[name].email, PASSWORD);
const call = (s: Signed | null, method: string, path: string, body?: unknown, csrf = true) =>
  consoleCall(origin, s, method, path, body, csrf);

async function json<T>(res: Response | Promise<Response>, status = 200): Promise<T> {
  const r = await res;
  const body = await r.json();
  expect([r.status, body]).toEqual([status, expect.anything()]);
  return body as T;
}

const balanceOf = async (s: Signed) => (await json<{ balance: string }>(call(s, 'GET', '/billing'))).balance;

interface TopUpView {
  id: string;
  provider: string;
  status: string;
  amount: string;
  createdAt: string;
  decidedAt?: string;
  reason?: string;
}

/** A Stripe top-up as the browser starts it: the Checkout page's url, and the request it made. */
async function stripeTopUp(s: Signed, name: Name, amount: string) {
  const started = await json<{ provider: string; url: string }>(
    call(s, 'POST', '/billing/topups', { amount, provider: 'stripe' }),
  );
  const [latest] = (await json<{ data: TopUpView[] }>(call(s, 'GET', '/billing/topups'))).data;
  const request = (await new TopUpRequests(redis.client()).get(people[name].accountId, latest!.id))!;
  return { started, request };
}

/** Delivers an event as Stripe does, to this file's console, signed with its endpoint secret. */
const deliver = (type: string, object: object, o: Partial<Delivery> = {}) =>
  deliverStripeEvent(type, object, { origin, secret: WEBHOOK_SECRET, ...o });

const outcome = async (res: Response) => {
  const body = (await res.json()) as { outcome?: string; error?: { code: string } };
  return [res.status, body.outcome ?? body.error?.code];
};

describe('Stripe top-ups (stripe-mock, signed webhooks)', () => {
  it('CON-12 a top-up creates a Checkout Session at Stripe for the amount; its paid webhook credits once, delivered twice and again as another event', async () => {
    const s = await session('ann');
    const before = stripeApi.sent.length;
    const { started, request } = await stripeTopUp(s, 'ann', '25');
    expect(started).toEqual({
      provider: 'stripe',
      url: expect.stringMatching(/^https:\/\/checkout\.stripe\.com\//),
    });
    // What reached Stripe: one payment-mode session, one line item of 25.00 USD in cents, the ids,
    // the way back to the billing page, and an idempotency key so an SDK retry makes no second one.
    const created = stripeApi.sent.slice(before).filter((x) => x.path === '/v1/checkout/sessions');
    expect(created).toHaveLength(1);
    const form = created[0]!.form;
    expect(Object.fromEntries(form)).toMatchObject({
      mode: 'payment',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '2500',
      client_reference_id: request.id,
      'metadata[accountId]': people.ann.accountId,
      'metadata[topUpRequestId]': request.id,
      success_url: `http://console.test/billing?topup=${request.id}&checkout=success`,
      cancel_url: `http://console.test/billing?topup=${request.id}&checkout=cancel`,
    });
    expect(created[0]!.idempotencyKey).toBe(`topup-${request.id}`);
    expect(request).toMatchObject({ status: 'pending', amount: 25e9, currency: 'USD' });
    expect(request.checkoutSessionId).toMatch(/^cs_test_/);
    expect(await balanceOf(s)).toBe('0');

    const completed = paidSession(request);
    const eventId = `evt_${randomBytes(12).toString('hex')}`;
    expect(await outcome(await deliver('checkout.session.completed', completed, { id: eventId }))).toEqual([
      200,
      'credited',
    ]);
    // Stripe delivers again when it missed our 200; the same event credits nothing more.
    expect(await outcome(await deliver('checkout.session.completed', completed, { id: eventId }))).toEqual([
      200,
      'duplicate',
    ]);
    // Another event for the same session (a resend under a new id, a late async success).
    expect(await outcome(await deliver('checkout.session.completed', completed))).toEqual([200, 'duplicate']);
    expect(await outcome(await deliver('checkout.session.async_payment_succeeded', completed))).toEqual([
      200,
      'duplicate',
    ]);
    // Concurrent deliveries of one more fresh event for it: still once.
    const burst = await Promise.all([1, 2, 3].map(() => deliver('checkout.session.completed', completed)));
    for (const res of burst) expect(await outcome(res)).toEqual([200, 'duplicate']);
    expect(await balanceOf(s)).toBe('25');

    const [listed] = (await json<{ data: TopUpView[] }>(call(s, 'GET', '/billing/topups'))).data;
    expect(listed).toMatchObject({ id: request.id, provider: 'stripe', status: 'credited', amount: '25' });
    const ledger = await json<{ topUps: { id: string; amount: string; source: string; note: string }[] }>(
      call(s, 'GET', '/billing/ledger'),
    );
    expect(ledger.topUps).toEqual([
      expect.objectContaining({
        id: request.id,
        amount: '25',
        source: 'stripe',
        note: expect.stringContaining(request.checkoutSessionId!),
      }),
    ]);
    await expectLedgerClean(redis.client(), [people.ann.accountId]);
  });

  it('a wrong, missing, stale or foreign signature, or a body changed after signing, is a 400 and credits nothing', async () => {
    const s = await session('bob');
    const { request } = await stripeTopUp(s, 'bob', '25');
    const completed = paidSession(request);
    const bad = [
      await deliver('checkout.session.completed', completed, {
        secret: `whsec_${randomBytes(24).toString('hex')}`,
      }),
      await deliver('checkout.session.completed', completed, {
        timestamp: Math.floor(Date.now() / 1000) - 3600,
      }),
      await deliver('checkout.session.completed', completed, {
        tamper: (p) => p.replace('"amount_total":2500', '"amount_total":250000'),
      }),
      await fetch(`${origin}/webhooks/stripe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id: 'evt_x',
          type: 'checkout.session.completed',
          data: { object: completed },
        }),
      }),
    ];
    for (const res of bad) expect(await outcome(res)).toEqual([400, 'invalid_request']);
    expect(await balanceOf(s)).toBe('0');
    expect((await new TopUpRequests(redis.client()).get(people.bob.accountId, request.id))?.status).toBe(
      'pending',
    );
    await expectLedgerClean(redis.client(), [people.bob.accountId]);
  });

  it('credits only what the request recorded: a paid session for another amount, or not ours, credits nothing; other events are 200 and ignored', async () => {
    const s = await session('bob');
    const { request } = await stripeTopUp(s, 'bob', '25');
    const before = await balanceOf(s);
    const cases: [string, object, string][] = [
      ['checkout.session.completed', paidSession(request, { amount_total: 9_999 }), 'mismatch'],
      ['checkout.session.completed', paidSession(request, { currency: 'eur' }), 'mismatch'],
      ['checkout.session.completed', paidSession(request, { metadata: {} }), 'ignored'],
      ['checkout.session.completed', paidSession(request, { id: 'cs_test_someone_else' }), 'ignored'],
      ['checkout.session.completed', paidSession(request, { payment_status: 'unpaid' }), 'awaiting_payment'],
      ['customer.created', { id: 'cus_1', object: 'customer' }, 'ignored'],
      ['payment_intent.succeeded', { id: 'pi_1', object: 'payment_intent', amount: 2500 }, 'ignored'],
    ];
    for (const [type, object, expected] of cases)
      expect([type, ...(await outcome(await deliver(type, object)))]).toEqual([type, 200, expected]);
    expect(await balanceOf(s)).toBe(before);
    // An expired checkout closes its request: nothing was paid, nothing is credited.
    expect(
      await outcome(
        await deliver('checkout.session.expired', paidSession(request, { payment_status: 'unpaid' })),
      ),
    ).toEqual([200, 'closed']);
    const [closed] = (await json<{ data: TopUpView[] }>(call(s, 'GET', '/billing/topups'))).data;
    expect(closed).toMatchObject({
      id: request.id,
      status: 'rejected',
      reason: 'the checkout expired unpaid',
    });
    expect(await balanceOf(s)).toBe(before);
    await expectLedgerClean(redis.client(), [people.bob.accountId]);
  });

  it('amounts are whole minor units of the account currency: yen have none, cents two; limits hold', async () => {
    const jun = await session('jun');
    const before = stripeApi.sent.length;
    const { request } = await stripeTopUp(jun, 'jun', '500');
    const [created] = stripeApi.sent.slice(before).filter((x) => x.path === '/v1/checkout/sessions');
    expect(created!.form.get('line_items[0][price_data][currency]')).toBe('jpy');
    expect(created!.form.get('line_items[0][price_data][unit_amount]')).toBe('500');
    expect(request).toMatchObject({ amount: 500e9, currency: 'JPY' });
    const ann = await session('ann');
    for (const [s, amount, message] of [
      [jun, '500.5', /JPY amounts are whole numbers/],
      [ann, '10.005', /USD amounts have at most 2 decimal places/],
      [ann, '4.99', /from 5 to 10000 USD/],
      [ann, '10000.01', /from 5 to 10000 USD/],
      [ann, '-5', /amount/],
      [ann, '1e3', /amount/],
    ] as const) {
      const body = await json<{ error: { param: string; message: string } }>(
        call(s, 'POST', '/billing/topups', { amount, provider: 'stripe' }),
        400,
      );
      expect([amount, body.error.param, body.error.message]).toEqual([
        amount,
        'amount',
        expect.stringMatching(message),
      ]);
    }
    expect(
      (
        await json<{ error: { param: string } }>(
          call(ann, 'POST', '/billing/topups', { amount: '5', provider: 'paypal' }),
          400,
        )
      ).error.param,
    ).toBe('provider');
  });
});

describe('top-ups by operator approval (CLI)', () => {
  /** `modelplane <argv> --json` as an operator runs it (the CLI's own Redis connection). */
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(
      [...argv, '--json'],
      { out: (s) => out.push(s), err: (s) => err.push(s) },
      (j, o) => createContext(j, o),
    );
    return { code, body: out.length > 0 ? JSON.parse(out.at(-1)!) : null, err: err.join('\n') };
  };

  it('CON-12 a request waits; approve credits it once, however often and concurrently it is run; reject credits nothing', async () => {
    const s = await session('ann');
    const start = await balanceOf(s);
    const asked = await json<{ provider: string; request: TopUpView }>(
      call(s, 'POST', '/billing/topups', { amount: '40', provider: 'approval' }),
    );
    expect(asked).toMatchObject({ provider: 'approval', request: { status: 'pending', amount: '40' } });
    const id = asked.request.id;
    const waiting = await cli('topups', 'list');
    expect(waiting.code).toBe(0);
    expect(waiting.body).toContainEqual(
      expect.objectContaining({ id, accountId: people.ann.accountId, amount: '40', status: 'pending' }),
    );
    expect(await balanceOf(s)).toBe(start);

    const approved = await cli('topups', 'approve', id, '--by', 'ops@example.com');
    expect(approved).toMatchObject({
      code: 0,
      body: { id, status: 'credited', decidedBy: 'ops@example.com', changed: true },
    });
    const again = await cli('topups', 'approve', id);
    expect(again).toMatchObject({ code: 0, body: { status: 'credited', changed: false } });
    const expected = (Number(start) + 40).toString();
    expect(await balanceOf(s)).toBe(expected);
    expect((await cli('topups', 'reject', id)).code).toBe(2); // approved: too late to reject
    expect((await cli('topups', 'list')).body.map((r: { id: string }) => r.id)).not.toContain(id);

    // Two operators approving the same request at once.
    const twice = await json<{ request: TopUpView }>(
      call(s, 'POST', '/billing/topups', { amount: '7', provider: 'approval' }),
    );
    const both = await Promise.all([
      cli('topups', 'approve', twice.request.id),
      cli('topups', 'approve', twice.request.id),
    ]);
    expect(both.map((b) => b.code)).toEqual([0, 0]);
    expect(await balanceOf(s)).toBe((Number(expected) + 7).toString());

    const declined = await json<{ request: TopUpView }>(
      call(s, 'POST', '/billing/topups', { amount: '100', provider: 'approval' }),
    );
    expect(await cli('topups', 'reject', declined.request.id, '--by', 'ops')).toMatchObject({
      code: 0,
      body: { status: 'rejected', changed: true },
    });
    expect(await cli('topups', 'reject', declined.request.id)).toMatchObject({
      code: 0,
      body: { changed: false },
    });
    const late = await cli('topups', 'approve', declined.request.id);
    expect([late.code, late.err]).toEqual([2, expect.stringMatching(/was rejected by ops/)]);
    expect(await balanceOf(s)).toBe((Number(expected) + 7).toString());

    const listed = (await json<{ data: TopUpView[] }>(call(s, 'GET', '/billing/topups'))).data;
    expect(listed.find((r) => r.id === declined.request.id)).toMatchObject({
      status: 'rejected',
      decidedAt: expect.any(String),
    });
    const ledger = await json<{ topUps: { id: string; source: string; note: string }[] }>(
      call(s, 'GET', '/billing/ledger'),
    );
    expect(ledger.topUps).toContainEqual(
      expect.objectContaining({
        id,
        source: 'approval',
        note: expect.stringContaining('approved by ops@example.com'),
      }),
    );
    expect(ledger.topUps.map((t) => t.id)).not.toContain(declined.request.id);
    await expectLedgerClean(redis.client(), [people.ann.accountId]);
  });

  it('a Stripe request cannot be approved by hand; an unknown id is an error', async () => {
    const s = await session('bob');
    const { request } = await stripeTopUp(s, 'bob', '30');
    const r = await cli('topups', 'approve', request.id);
    expect([r.code, r.err]).toEqual([2, expect.stringMatching(/paid through stripe/)]);
    expect((await cli('topups', 'approve', 'topup_0000000000000000')).code).toBe(2);
    expect((await new TopUpRequests(redis.client()).get(people.bob.accountId, request.id))?.status).toBe(
      'pending',
    );
  });
});

describe('the ledger view', () => {
  it('groups API charges by day and model, lists top-ups, refunds and service charges; service charges stay out of Inference API Usage', async () => {
    const r = redis.client();
    const accountId = people.jun.accountId;
    const today = Date.now();
    const yesterday = today - DAY_MS;
    const at = (ms: number) => new Metering(r, { now: () => ms });
    await at(yesterday).topUp({ accountId, topUpId: 'grant-1', amount: 1_000e9, note: 'cli: credits grant' });
    const charge = (ms: number, id: string, model: string, cost: number, kind: 'chat' | 'video' = 'chat') =>
      at(ms).charge({ accountId, chargeId: id, cost, usage: { keyId: 'key_j', model, kind, requestId: id } });
    await charge(yesterday, 'c1', 'Org/Chat', 3e9);
    await charge(yesterday, 'c2', 'Org/Chat', 2e9);
    await charge(yesterday, 'c3', 'Org/Video', 10e9, 'video');
    await charge(today, 'c4', 'Org/Chat', 1e9);
    await at(today).refund({
      accountId,
      refundId: 'video:c3',
      of: 'charge:c3',
      amount: 10e9,
      usage: { keyId: 'key_j', model: 'Org/Video', kind: 'video' },
    });
    const svc = (path: string, body: object) =>
      fetch(`${origin}/ledger/v1/accounts/${accountId}/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    await json(
      svc('charges', { id: 'gpu-7', amount: '120', description: 'H100 × 2 h', product: 'gpu-rental' }),
    );
    await json(
      svc('refunds', { id: 'gpu-7-r', chargeId: 'gpu-7', amount: '20', description: 'downtime credit' }),
    );

    const s = await session('jun');
    const from = yesterday - DAY_MS;
    const ledger = await json<{
      currency: string;
      topUps: { id: string; amount: string; source: string }[];
      charges: { day: string; model: string; requests: number; amount: string }[];
      refunds: { id: string; amount: string; of: string; model: string }[];
      service: { id: string; type: string; amount: string; product: string; description: string }[];
    }>(call(s, 'GET', `/billing/ledger?from=${from}&to=${today + 60_000}`));
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expect(ledger.currency).toBe('JPY');
    expect(ledger.charges).toEqual([
      { day: day(yesterday), model: 'Org/Chat', requests: 2, amount: '5' },
      { day: day(yesterday), model: 'Org/Video', requests: 1, amount: '10' },
      { day: day(today), model: 'Org/Chat', requests: 1, amount: '1' },
    ]);
    expect(ledger.topUps).toContainEqual(
      expect.objectContaining({ id: 'grant-1', amount: '1000', source: 'operator' }),
    );
    expect(ledger.refunds).toEqual([
      expect.objectContaining({ id: 'video:c3', amount: '10', of: 'c3', model: 'Org/Video' }),
    ]);
    expect(ledger.service).toEqual([
      expect.objectContaining({
        id: 'gpu-7',
        type: 'charge',
        amount: '120',
        product: 'gpu-rental',
        description: 'H100 × 2 h',
      }),
      expect.objectContaining({
        id: 'gpu-7-r',
        type: 'refund',
        amount: '20',
        product: 'gpu-rental',
        description: 'downtime credit',
      }),
    ]);
    // Only today: yesterday's charges are outside the range.
    const todayOnly = await json<{ charges: { day: string }[] }>(
      call(s, 'GET', `/billing/ledger?from=${today - 1000}`),
    );
    expect(todayOnly.charges.map((c) => c.day)).toEqual([day(today)]);
    // Inference API Usage shows API calls only.
    const usage = await json<{ rows: { group: string }[] }>(
      call(s, 'GET', `/usage?group=model&from=${from}`),
    );
    expect(usage.rows.map((row) => row.group).sort()).toEqual(['Org/Chat', 'Org/Video']);
    expect(
      (
        await json<{ error: { param: string } }>(
          call(s, 'GET', `/billing/ledger?from=${today}&to=${yesterday}`),
          400,
        )
      ).error.param,
    ).toBe('from');
    await expectLedgerClean(r, [accountId]);
  });
});

describe('the service ledger API', () => {
  const api = (method: string, path: string, body?: unknown, token: string | null = SERVICE_TOKEN) =>
    fetch(`${origin}/ledger/v1${path}`, {
      method,
      headers: {
        ...(token === null ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('refuses a missing or wrong service token (an API key is not one)', async () => {
    const acct = people.bob.accountId;
    const charge = { id: 'no-token', amount: '1', description: 'x' };
    for (const [token, label] of [
      [null, 'none'],
      [`${SERVICE_TOKEN}x`, 'longer'],
      [SERVICE_TOKEN.slice(0, -1), 'shorter'],
      [`${SERVICE_TOKEN.slice(0, -1)}${SERVICE_TOKEN.endsWith('0') ? '1' : '0'}`, 'one character off'],
      ['sk-service-0123456789abcdef0123456789abcdef0123456789abcdef', 'an API key'],
    ] as const) {
      for (const [method, path, body] of [
        ['GET', `/accounts/${acct}/balance`],
        ['POST', `/accounts/${acct}/charges`, charge],
        ['POST', `/accounts/${acct}/refunds`, { ...charge, chargeId: 'x' }],
        ['GET', '/accounts/acct_nope/balance'],
      ] as const) {
        const res = await api(method, path, body, token);
        expect([label, method, path, ...(await outcome(res))]).toEqual([
          label,
          method,
          path,
          401,
          'invalid_api_key',
        ]);
      }
    }
    const basic = await fetch(`${origin}/ledger/v1/accounts/${acct}/balance`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${SERVICE_TOKEN}`).toString('base64')}` },
    });
    expect(basic.status).toBe(401);
    await expectLedgerClean(redis.client(), [acct]);
  });

  it('BILL-6 charges once per caller id, refunds never beyond the charge, and the balance matches', async () => {
    const r = redis.client();
    const acct = people.bob.accountId;
    await new Metering(r).topUp({ accountId: acct, topUpId: 'svc-seed', amount: 10e9 });
    const start = await json<{ balance: string; available: string; currency: string }>(
      api('GET', `/accounts/${acct}/balance`),
    );
    expect(start.currency).toBe('USD');
    const base = Number(start.balance);

    const first = await json<{ duplicate: boolean; amount: string }>(
      api('POST', `/accounts/${acct}/charges`, {
        id: 'rental-1',
        amount: '3.5',
        description: 'A100 × 1 h',
        product: 'gpu-rental',
      }),
    );
    expect(first).toMatchObject({
      id: 'rental-1',
      object: 'charge',
      amount: '3.5',
      currency: 'USD',
      duplicate: false,
    });
    // A retry after a lost reply, and two at once: charged once.
    const retries = await Promise.all(
      [1, 2, 3].map(() =>
        json<{ duplicate: boolean }>(
          api('POST', `/accounts/${acct}/charges`, {
            id: 'rental-1',
            amount: '3.5',
            description: 'A100 × 1 h',
          }),
        ),
      ),
    );
    expect(retries.map((x) => x.duplicate)).toEqual([true, true, true]);
    const concurrent = await Promise.all(
      [1, 2].map(() =>
        json<{ duplicate: boolean }>(
          api('POST', `/accounts/${acct}/charges`, {
            id: 'rental-2',
            amount: '1',
            description: 'A100 × 20 min',
          }),
        ),
      ),
    );
    expect(concurrent.map((x) => x.duplicate).sort()).toEqual([false, true]);
    expect((await json<{ balance: string }>(api('GET', `/accounts/${acct}/balance`))).balance).toBe(
      String(base - 4.5),
    );
    const reused = await json<{ error: { param: string } }>(
      api('POST', `/accounts/${acct}/charges`, { id: 'rental-1', amount: '9', description: 'other' }),
      400,
    );
    expect(reused.error.param).toBe('id');

    const tooMuch = await api('POST', `/accounts/${acct}/charges`, {
      id: 'rental-big',
      amount: '1000',
      description: 'x',
    });
    expect(await outcome(tooMuch)).toEqual([429, 'insufficient_quota']);

    const refund = await json<{ duplicate: boolean }>(
      api('POST', `/accounts/${acct}/refunds`, {
        id: 'refund-1',
        chargeId: 'rental-1',
        amount: '1.5',
        description: 'ended early',
      }),
    );
    expect(refund).toMatchObject({
      id: 'refund-1',
      object: 'refund',
      chargeId: 'rental-1',
      amount: '1.5',
      duplicate: false,
    });
    expect(
      (
        await json<{ duplicate: boolean }>(
          api('POST', `/accounts/${acct}/refunds`, {
            id: 'refund-1',
            chargeId: 'rental-1',
            amount: '1.5',
            description: 'ended early',
          }),
        )
      ).duplicate,
    ).toBe(true);
    const beyond = await json<{ error: { param: string; message: string } }>(
      api('POST', `/accounts/${acct}/refunds`, {
        id: 'refund-2',
        chargeId: 'rental-1',
        amount: '2.5',
        description: 'too much',
      }),
      400,
    );
    expect(beyond.error).toMatchObject({
      param: 'amount',
      message: expect.stringMatching(/cannot exceed what it charged/),
    });
    const unknown = await json<{ error: { param: string } }>(
      api('POST', `/accounts/${acct}/refunds`, {
        id: 'refund-3',
        chargeId: 'rental-none',
        amount: '1',
        description: 'x',
      }),
      400,
    );
    expect(unknown.error.param).toBe('chargeId');
    // The rest of the charge can still be refunded.
    await json(
      api('POST', `/accounts/${acct}/refunds`, {
        id: 'refund-4',
        chargeId: 'rental-1',
        amount: '2',
        description: 'rest',
      }),
    );

    const end = await json<{ balance: string; held: string; available: string }>(
      api('GET', `/accounts/${acct}/balance`),
    );
    expect(end).toMatchObject({ balance: String(base - 1), held: '0', available: String(base - 1) });
    const s = await session('bob');
    expect(await balanceOf(s)).toBe(end.balance);
    expect((await api('GET', '/accounts/acct_nope/balance')).status).toBe(404);
    expect(
      (
        await json<{ error: { param: string } }>(
          api('POST', `/accounts/${acct}/charges`, { id: 'bad id!', amount: '1', description: 'x' }),
          400,
        )
      ).error.param,
    ).toBe('id');
    expect(
      (
        await json<{ error: { param: string } }>(
          api('POST', `/accounts/${acct}/charges`, { id: 'zero', amount: '0', description: 'x' }),
          400,
        )
      ).error.param,
    ).toBe('amount');
    await expectLedgerClean(r, [acct]);
  });
});

describe('sessions, CSRF and accounts', () => {
  it('no billing route works without a session, and none changes state without the CSRF token', async () => {
    const s = await session('ann');
    const before = (await new TopUpRequests(redis.client()).list(people.ann.accountId)).length;
    for (const [method, path, body] of [
      ['GET', '/billing/ledger'],
      ['GET', '/billing/providers'],
      ['GET', '/billing/topups'],
      ['POST', '/billing/topups', { amount: '10', provider: 'approval' }],
      ['POST', '/billing/topups', { amount: '10', provider: 'stripe' }],
    ] as const) {
      expect([method, path, (await call(null, method, path, body)).status]).toEqual([method, path, 401]);
      if (method === 'POST') {
        expect([method, path, (await call(s, method, path, body, false)).status]).toEqual([
          method,
          path,
          403,
        ]);
        expect([method, path, (await call({ ...s, csrf: `${s.csrf}x` }, method, path, body)).status]).toEqual(
          [method, path, 403],
        );
      }
    }
    expect(await new TopUpRequests(redis.client()).list(people.ann.accountId)).toHaveLength(before);
  });

  it("one account never sees another's top-up requests or ledger", async () => {
    const ann = await session('ann');
    const bob = await session('bob');
    const mine = await json<{ request: TopUpView }>(
      call(ann, 'POST', '/billing/topups', { amount: '11', provider: 'approval' }),
    );
    const bobs = (await json<{ data: TopUpView[] }>(call(bob, 'GET', '/billing/topups'))).data;
    expect(bobs.map((r) => r.id)).not.toContain(mine.request.id);
    expect(bobs.length).toBeGreaterThan(0); // bob has requests of his own: the list is scoped, not empty
    const annLedger = await json<{ topUps: { id: string }[] }>(call(ann, 'GET', '/billing/ledger'));
    const bobLedger = await json<{ topUps: { id: string }[]; service: unknown[] }>(
      call(bob, 'GET', '/billing/ledger'),
    );
    const annIds = new Set(annLedger.topUps.map((t) => t.id));
    expect(annIds.size).toBeGreaterThan(0);
    expect(bobLedger.topUps.filter((t) => annIds.has(t.id))).toEqual([]);
  });

  it('providers: what this install offers, the limits, and the decimals of the account currency', async () => {
    const jun = await session('jun');
    expect(await json(call(jun, 'GET', '/billing/providers'))).toEqual({
      providers: ['stripe', 'approval'],
      currency: 'JPY',
      min: '5',
      max: '10000',
      decimals: 0,
    });
  });
});

describe('an install with the defaults (approval only, no service token)', () => {
  let plain: FastifyInstance;
  let plainOrigin: string;
  beforeAll(async () => {
    plain = await buildConsoleApp({
      config: loadConfig({ REDIS_URL: redis.url, MODELPLANE_KEK: randomBytes(32).toString('hex') }),
      redis: redis.client(),
      logger: false,
    });
    plainOrigin = await plain.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => plain?.close());

  it('offers approval only, has no Stripe webhook, and the ledger API is off (404)', async () => {
    const s = await session('ann', plainOrigin);
    const providers = await fetch(`${plainOrigin}/api/billing/providers`, { headers: { cookie: s.cookie } });
    expect(((await providers.json()) as { providers: string[] }).providers).toEqual(['approval']);
    const stripe = await fetch(`${plainOrigin}/api/billing/topups`, {
      method: 'POST',
      headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '10', provider: 'stripe' }),
    });
    expect(await outcome(stripe)).toEqual([400, 'invalid_request']);
    expect(
      (
        await fetch(`${plainOrigin}/webhooks/stripe`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(404);
    const ledger = await fetch(`${plainOrigin}/ledger/v1/accounts/${people.ann.accountId}/balance`, {
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
    });
    expect(await outcome(ledger)).toEqual([404, 'not_found']);
  });
});

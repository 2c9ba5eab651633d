// meteredCall, the one lifecycle of a charged call, against a fake Billing (no Redis) in a real
// fastify app: the steps its opening comment lists — the gate refusing before anything runs, the
// hold released whenever the call fails before its answer, settle-then-deliver (the answer and its
// cost header wait for the settlement's journal write), the relay taking a stream over, a charge
// made at once — and the failure mapping (a key rotated mid-call → 401, shutdown → its own error,
// a failure the call answered itself → nothing more sent).
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, billingUnavailable, shuttingDown } from '../../core/errors.ts';
import { errorsPlugin } from '../../http/errors.ts';
import { KeyCache, type KeyLease } from '../auth/key-cache.ts';
import type { CallInfo, Charge, HeldRun, Quote } from '../billing/charge.ts';
import type { ProxyContext } from '../context.ts';
import type { Cancel } from '../engine/cancel.ts';
import '../plugins/auth.ts'; // the request's principal and keyLease declarations
import { type ChargedNowCall, type HeldCall, meteredCall } from './metered.ts';

const QUOTE: Quote = { min: 1, max: 10, full: 10, allowance: (held) => held };

/** What the fake Billing and its charge were asked, in order. */
let log: string[];
/** The settlement's journal write: deliveries waiting for it (run by the test). */
let journal: (() => void)[];
/** Billing.open refuses (the outbox gate) while set. */
let gate: ApiError | null;
/** The call each request runs; set by the test. */
let call: HeldCall<string> | ChargedNowCall;
/** The Cancel the call's run was given. */
let ranWith: Cancel | undefined;

const keys = new KeyCache({ lookup: async () => null, ttlMs: 0 });

function fakeCharge(info: CallInfo): Charge {
  return {
    allowance: 0,
    async hold<T>(h: HeldRun<T>): Promise<T> {
      log.push('hold');
      ranWith = info.cancel;
      try {
        return await h.run(7, info.cancel);
      } catch (err) {
        log.push('hold failed');
        throw err;
      }
    },
    settle(cost: number, counts: unknown, deliver: () => void) {
      log.push(`settle ${cost} ${JSON.stringify(counts)}`);
      journal.push(deliver);
    },
    release() {
      log.push('release');
    },
    async chargeNow() {
      log.push('charge now');
      return { ok: true, charged: 3, balance: 0, duplicate: false, keyLimit: null };
    },
  } as unknown as Charge;
}

const ctx = {
  billing: {
    open(info: CallInfo, quote: Quote) {
      log.push(`open ${info.kind} ${info.model} max=${quote.max}`);
      if (gate !== null) throw gate;
      return fakeCharge(info);
    },
  },
} as unknown as ProxyContext;

let app: FastifyInstance;
/** The reply of the request being served (one at a time). */
let currentReply: FastifyReply | undefined;

beforeAll(async () => {
  app = Fastify();
  app.decorateRequest('keyLease', null as unknown as KeyLease);
  app.decorateRequest('principal', null as unknown as FastifyRequest['principal']);
  await app.register(errorsPlugin);
  app.addHook('onRequest', async (request, reply) => {
    currentReply = reply;
    request.keyLease = keys.track('key-hash');
    request.principal = {
      accountId: 'acct',
      keyId: 'key',
      secretHash: 'key-hash',
      currency: 'USD',
      grants: new Set(),
      spendLimit: null,
    };
  });
  app.post('/call', (request: FastifyRequest, reply: FastifyReply) => meteredCall(ctx, request, reply, call));
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});
beforeEach(() => {
  log = [];
  journal = [];
  gate = null;
  ranWith = undefined;
});

/** A whole answer: the engine's result billed 0.005 for two images, sent as JSON. */
function wholeCall(run: HeldCall<string>['run']): HeldCall<string> {
  return {
    kind: 'image',
    model: 'img',
    quote: QUOTE,
    run,
    bill: (result) => ({
      cost: 5_000_000,
      counts: { images: 2 },
      deliver: () => {
        log.push('deliver');
        currentReply!.send({ result });
      },
    }),
  };
}

async function inject() {
  return app.inject({ method: 'POST', url: '/call', payload: {} });
}

describe('meteredCall', () => {
  it('refused at the gate (settlements cannot reach Redis): the engine is never called, the refusal is the answer', async () => {
    gate = billingUnavailable();
    let ran = false;
    call = wholeCall(async () => {
      ran = true;
      return 'x';
    });
    const res = await inject();
    expect(res.statusCode).toBe(gate.status);
    expect(res.json().error.code).toBe(gate.code);
    expect(ran).toBe(false);
    expect(log).toEqual(['open image img max=10']);
  });

  it('a whole answer is settled first, and sent (with its cost header) only once the settlement is journaled', async () => {
    call = wholeCall(async (allowance) => `made ${allowance}`);
    const routed = inject();
    await until(() => journal.length === 1);
    expect(log).toEqual(['open image img max=10', 'hold', 'settle 5000000 {"images":2}']);
    expect(log).not.toContain('deliver');
    journal.shift()!();
    const res = await routed;
    expect(log.at(-1)).toBe('deliver');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ result: 'made 7' });
    expect(res.headers['x-modelplane-cost']).toBe('0.005');
    expect(log).not.toContain('release');
  });

  it('an engine failure before the answer releases the hold and answers the error', async () => {
    call = wholeCall(async () => {
      throw new ApiError('server_error', 'No engine could serve it.');
    });
    const res = await inject();
    expect(res.statusCode).toBe(500);
    expect(log).toEqual(['open image img max=10', 'hold', 'hold failed', 'release']);
  });

  it('a bill that fails (an unreadable answer) releases the hold too, and settles nothing', async () => {
    call = {
      ...wholeCall(async () => 'x'),
      bill: () => {
        throw new ApiError('server_error', 'The engine sent no image.');
      },
    };
    const res = await inject();
    expect(res.statusCode).toBe(500);
    expect(log).toEqual(['open image img max=10', 'hold', 'release']);
  });

  it('the key rotated mid-call: the engine call is cancelled and the answer is 401 invalid_api_key, whatever the run threw', async () => {
    call = wholeCall(
      (_a, cancel) =>
        new Promise((_resolve, reject) => {
          cancel.onAbort(() => reject(new Error('engine request aborted')));
          keys.invalidate('key-hash');
        }),
    );
    const res = await inject();
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('invalid_api_key');
    expect(log).toContain('release');
  });

  it('the proxy ended the call (shutdown): its own error is the answer, not the engine failure it caused', async () => {
    call = wholeCall(async (_a, cancel) => {
      cancel.abort(shuttingDown());
      throw new Error('engine request aborted');
    });
    const res = await inject();
    expect(res.statusCode).toBe(500);
    expect(res.json().error.message).toBe(shuttingDown().message);
    expect(res.headers['retry-after']).toBe('1'); // retry on another replica
  });

  it('a failure the call answered itself (a stream whose head is out) is not answered again', async () => {
    const seen: unknown[] = [];
    call = {
      ...wholeCall(async () => {
        throw new Error('engine died after the head');
      }),
      failed: (err) => {
        seen.push(err);
        currentReply!.code(299).send('in-band error');
        return true;
      },
    };
    const res = await inject();
    expect(res.statusCode).toBe(299);
    expect(res.body).toBe('in-band error');
    expect(seen).toHaveLength(1);
    expect(log).toContain('release');
  });

  it('a started stream is handed to the relay with its charge: meteredCall settles nothing itself', async () => {
    let relayed: { result: string; charge: Charge; cancel: Cancel } | undefined;
    call = {
      kind: 'chat',
      model: 'm',
      quote: QUOTE,
      run: async () => 'stream',
      relay: async (result, charge, abort) => {
        relayed = { result, charge, cancel: abort.cancel };
        currentReply!.send('relayed');
      },
    };
    const res = await inject();
    expect(res.body).toBe('relayed');
    expect(relayed?.result).toBe('stream');
    expect(relayed?.cancel).toBe(ranWith);
    expect(log).toEqual(['open chat m max=10', 'hold']);
  });

  it('a charge made at once (a video job) is made, then answered; no hold', async () => {
    call = {
      kind: 'video',
      model: 'v',
      quote: QUOTE,
      now: async (charge) => {
        await charge.chargeNow({} as Parameters<Charge['chargeNow']>[0]);
        return () => {
          log.push('deliver');
          currentReply!.send({ id: 'video_1' });
        };
      },
    };
    const res = await inject();
    expect(res.json()).toEqual({ id: 'video_1' });
    expect(log).toEqual(['open video v max=10', 'charge now', 'deliver']);
  });
});

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 2));
  if (!ok()) throw new Error('timed out');
}

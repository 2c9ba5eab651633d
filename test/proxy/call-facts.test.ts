// What the console shows of each call besides its money (issue 37 item 7), through the real proxy
// and the official SDK: a whole answer's and a stream's status, latency, TTFT and finish reason as
// the client saw them; calls refused at the door (bad input, no credit) as refusals of the
// account's capped list, charged nothing; each test ends with the ledger check.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CallFact, callFacts, refusedCalls } from '../../core/usage/call-facts.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.stop());

const messages = [{ role: 'user' as const, content: 'say something' }];

/** The call's facts once the proxy wrote them (after the response ended). */
async function factOf(accountId: string, requestId: string): Promise<CallFact> {
  return vi.waitFor(
    async () => {
      const got = (await callFacts(h.redis.client(), accountId, [requestId])).get(requestId);
      if (got === undefined) throw new Error('not recorded yet');
      return got;
    },
    { timeout: 20_000, interval: 50 },
  );
}

describe('call facts through the proxy', () => {
  it('a whole answer: status 200, latency, no TTFT, the finish reason the client got', async () => {
    const a = await h.newAccount({ credit: '1' });
    const { data, response } = await h
      .client(a.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 12 })
      .withResponse();
    const fact = await factOf(a.accountId, response.headers.get('x-request-id')!);
    expect(fact).toMatchObject({ status: 200, ttftMs: null, finishReason: data.choices[0]!.finish_reason });
    expect(fact.finishReason).not.toBeNull();
    expect(fact.latencyMs).toBeGreaterThanOrEqual(0);
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a stream: TTFT no later than its end, and its finish reason', async () => {
    const a = await h.newAccount({ credit: '1' });
    const { data: stream, response } = await h
      .client(a.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5, stream: true })
      .withResponse();
    let finish: string | null = null;
    for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
    expect(finish).not.toBeNull();
    const fact = await factOf(a.accountId, response.headers.get('x-request-id')!);
    expect(fact).toMatchObject({ status: 200, finishReason: finish });
    expect(fact.ttftMs).not.toBeNull();
    expect(fact.ttftMs!).toBeLessThanOrEqual(fact.latencyMs);
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a stream whose engine sends its role frame at once and its first word later: TTFT is the first word', async () => {
    // An engine that sends its empty role frame as soon as the request is admitted and the first
    // content after prefill: TTFT is the content's time, not the role frame's (issue 48 item 5).
    const PREFILL_MS = 400;
    for (const s of h.sims) s.setOptions({ ttftMs: PREFILL_MS, earlyRoleFrame: true });
    try {
      const a = await h.newAccount({ credit: '1' });
      const started = performance.now();
      const { data: stream, response } = await h
        .client(a.secret)
        .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5, stream: true })
        .withResponse();
      let firstWordMs: number | null = null;
      for await (const chunk of stream)
        if (firstWordMs === null && chunk.choices[0]?.delta?.content)
          firstWordMs = performance.now() - started;
      expect(firstWordMs).toBeGreaterThanOrEqual(PREFILL_MS);
      const fact = await factOf(a.accountId, response.headers.get('x-request-id')!);
      expect(fact.ttftMs).toBeGreaterThanOrEqual(PREFILL_MS);
      expect(fact.ttftMs!).toBeLessThanOrEqual(fact.latencyMs);
      await h.settled(a.accountId);
      await expectLedgerClean(h.redis.client(), [a.accountId]);
    } finally {
      for (const s of h.sims) s.setOptions({ ttftMs: 5, earlyRoleFrame: false });
    }
  });

  it('BILL-6 refused at the door (a 400, a 429 for no credit): a refusal row each, nothing charged', async () => {
    const a = await h.newAccount({ credit: '1' });
    const broke = await h.newAccount({ credit: '0' });
    const before = await h.settled(a.accountId);
    const bad = await h
      .client(a.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, temperature: 99 })
      .catch((e: unknown) => e as { status: number; requestID: string });
    expect(bad).toMatchObject({ status: 400 });
    const poor = await h
      .client(broke.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 })
      .catch((e: unknown) => e as { status: number; requestID: string });
    expect(poor).toMatchObject({ status: 429 });

    const refusalOf = (accountId: string) =>
      vi.waitFor(
        async () => {
          const got = await refusedCalls(h.redis.client(), accountId, {
            fromMs: 0,
            toMs: Date.now() + 60_000,
            limit: 10,
          });
          if (got.length === 0) throw new Error('not recorded yet');
          return got;
        },
        { timeout: 20_000, interval: 50 },
      );
    const [r400] = await refusalOf(a.accountId);
    expect(r400).toMatchObject({
      requestId: (bad as { requestID: string }).requestID,
      status: 400,
      code: 'invalid_request',
      keyId: a.keyId,
      model: CHAT_MODEL,
      route: '/v1/chat/completions',
    });
    const [r429] = await refusalOf(broke.accountId);
    expect(r429).toMatchObject({ status: 429, code: 'insufficient_quota', keyId: broke.keyId });
    // Refusals have no facts of a delivered call, and cost nothing.
    expect((await callFacts(h.redis.client(), a.accountId, [r400!.requestId])).size).toBe(0);
    expect((await h.settled(a.accountId)).balance).toBe(before.balance);
    await expectLedgerClean(h.redis.client(), [a.accountId, broke.accountId]);
  });
});

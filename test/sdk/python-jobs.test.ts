// The official Python SDKs over background work (issue 48 item 1): a background response, an OpenAI
// batch and a Message Batch created, retrieved, listed and cancelled through openai-python and
// anthropic-python. openai-python sends `Content-Type: application/json` with an empty body on a
// body-less POST; the cancels take no body, so that is no body, not a 400 "The request body is
// empty" — and a cancel of an unknown id is the 404 it is. Cancelled work is billed only for what
// ran; the ledger check is clean.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, chatModel, type Harness, startHarness } from '../proxy/harness.ts';

const here = new URL('./', import.meta.url).pathname;

let h: Harness;
let python: string;
beforeAll(async () => {
  python = execFileSync(`${here}python-sdks.sh`, ['--check'], { encoding: 'utf8' }).trim();
  h = await startHarness(
    { BATCH_POLL_MS: '30', BATCH_CONCURRENCY: '2' },
    { entries: (endpoints) => [{ ...chatModel(CHAT_MODEL, endpoints), batchDiscountPercent: 50 }] },
  );
  // Slow enough that the background response and the batches are still running when cancelled.
  for (const s of h.sims) s.setOptions({ itlMs: 10 });
});
afterAll(async () => {
  await h?.stop();
});

describe('the official Python SDKs over background work', () => {
  it('responses, batches and message batches: create, retrieve, list, cancel (a body-less POST sent as application/json), an unknown id 404', async () => {
    const { stdout } = await promisify(execFile)(python, [`${here}jobs.py`], {
      encoding: 'utf8',
      timeout: 90_000,
      env: { ...process.env, MP_BASE: h.baseURL.replace(/\/v1$/, ''), MP_KEY: h.secret, MP_CHAT: CHAT_MODEL },
    });
    const out = JSON.parse(stdout);
    expect(out.responses).toEqual({
      created: 'queued',
      retrieved: expect.stringMatching(/^resp_/),
      cancelled: 'cancelled',
      input_items: 1,
      unknown_cancel: { status: 404, class: 'NotFoundError' },
    });
    expect(out.batches).toEqual({
      retrieved: true,
      listed: true,
      cancelled: expect.stringMatching(/^cancell(ing|ed)$/),
      unknown_cancel: { status: 404, class: 'NotFoundError' },
    });
    expect(out.message_batches).toEqual({
      retrieved: true,
      listed: true,
      cancelled: expect.stringMatching(/^(canceling|ended)$/),
      unknown_cancel: { status: 404, class: 'NotFoundError' },
    });
    // The cancelled batches' running lines finish and their holds are given back.
    await expect
      .poll(async () => (await h.metering.balance(h.accountId)).held, { timeout: 60_000, interval: 100 })
      .toBe(0);
    await h.settled(h.accountId);
    await expectLedgerClean(h.redis.client());
  }, 120_000);
});

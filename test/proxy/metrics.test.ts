// What /metrics reports after known traffic (issue 3 item 8): requests by route, model and status,
// latency histograms, tokens and credits as billed, in-flight back to zero. A harness of its own,
// so the counts are exactly this file's requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { scrapeMetrics } from '../helpers/metrics.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const scrape = () => scrapeMetrics(h.metricsURL);

const chat = '/v1/chat/completions';

describe('proxy metrics', () => {
  it('count requests, latency, tokens and credits as billed, and in-flight returns to zero', async () => {
    const client = h.client();
    const messages = [{ role: 'user' as const, content: 'Count me' }];
    const plain = await client.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 });
    const stream = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages,
      max_tokens: 7,
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed: { prompt_tokens: number; completion_tokens: number } | undefined;
    for await (const chunk of stream) streamed = chunk.usage ?? streamed;
    await expect(client.chat.completions.create({ model: 'no/such-model', messages })).rejects.toThrow();
    const { balance } = await h.settled(h.accountId);

    const m = await scrape();
    const ok = `{route="${chat}",model="${CHAT_MODEL}",status="200"}`;
    expect(m.get(`mp_proxy_requests_total${ok}`)).toBe(2);
    expect(m.get(`mp_proxy_requests_total{route="${chat}",model="",status="404"}`)).toBe(1);
    expect(m.get(`mp_proxy_request_duration_seconds_count{route="${chat}",model="${CHAT_MODEL}"}`)).toBe(2);
    expect(m.get(`mp_proxy_time_to_first_byte_seconds_count{route="${chat}",model="${CHAT_MODEL}"}`)).toBe(2);
    expect(m.get(`mp_proxy_added_latency_seconds_count{route="${chat}"}`)).toBe(1); // the stream
    expect(m.get(`mp_proxy_in_flight_requests{route="${chat}"}`)).toBe(0);

    const input = plain.usage!.prompt_tokens + streamed!.prompt_tokens;
    const output = plain.usage!.completion_tokens + streamed!.completion_tokens;
    expect(m.get(`mp_proxy_tokens_total{model="${CHAT_MODEL}",type="input"}`)).toBe(input);
    expect(m.get(`mp_proxy_tokens_total{model="${CHAT_MODEL}",type="output"}`)).toBe(output);
    // Credits charged equal what the account paid: the sum of its usage records' charges.
    const records = await usageRecords(h.redis.client(), h.accountId, { count: 100 });
    const charged = records.filter((r) => r.type === 'charge').reduce((s, r) => s + r.amount, 0);
    expect(charged).toBeGreaterThan(0);
    expect(m.get(`mp_proxy_credits_charged_nano_total{model="${CHAT_MODEL}",currency="USD"}`)).toBe(charged);
    expect(balance).toBeGreaterThan(0);
  });
});

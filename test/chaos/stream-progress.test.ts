// Chaos: a proxy replica SIGKILLed under streaming load. Its running streams had left their charge
// so far in its journal every PROXY_STREAM_PROGRESS_MS; when it starts again on its data directory,
// each stream the crash cut is charged for what it had delivered, less at most about one interval
// of tokens, never more than its client received (plus what was in flight). Every delivered call is
// charged exactly once, the ledger check is clean.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { chargesByRequest, eventually, MODEL, type ProxyProcess, startFleet } from './fleet.ts';

const ITL_MS = 10;
const PROGRESS_MS = 200;

interface Stream {
  id: string | null;
  outcome: 'delivered' | 'cut' | 'refused';
  /** Content chunks the client received (one token each from the simulator). */
  received: number;
}

describe('a replica SIGKILLed with streams running', () => {
  it('BILL-5 each stream the crash cut is charged for what it delivered, to within one progress interval; the ledger is clean', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('50'), sim: { ttftMs: 5, itlMs: ITL_MS } });
    try {
      const env = {
        PROXY_STREAM_PROGRESS_MS: String(PROGRESS_MS),
        HOLD_TTL_MS: '1500',
        HOLD_SWEEPER_LOCK_MS: '500',
        HOLD_SWEEP_INTERVAL_MS: '100',
      };
      const a = await fleet.startProxy('a', env);
      const b = await fleet.startProxy('b', env); // its sweeper voids a's holds and lease
      const streams: Stream[] = [];
      let running = true;
      const worker = async (p: ProxyProcess) => {
        const client = new OpenAI({ apiKey: fleet.secret, baseURL: `${p.url}/v1`, maxRetries: 0 });
        while (running) {
          const s: Stream = { id: null, outcome: 'refused', received: 0 };
          streams.push(s);
          try {
            const { data, response } = await client.chat.completions
              .create({
                model: MODEL,
                messages: [{ role: 'user', content: 'progress' }],
                stream: true,
                max_tokens: 150,
                ignore_eos: true,
              } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)
              .withResponse();
            s.id = response.headers.get('x-request-id');
            s.outcome = 'cut';
            for await (const c of data) if (c.choices[0]?.delta?.content) s.received++;
            s.outcome = 'delivered';
          } catch {
            return; // the replica died under it
          }
        }
      };
      const workers = Array.from({ length: 12 }, () => worker(a));
      // Streams are well into their tokens (several progress intervals) when a dies.
      await eventually(
        async () => streams.filter((s) => s.outcome === 'cut' && s.received > 60).length >= 8,
        'streams running',
      );
      a.proc.kill('SIGKILL');
      await a.exited;
      running = false;
      await Promise.all(workers);
      const cut = streams.filter((s) => s.outcome === 'cut' && s.id !== null);
      expect(cut.length).toBeGreaterThanOrEqual(8);

      // a starts again on its journal: delivered calls and cut streams' progress land.
      const again = await fleet.startProxy('a-again', env, a.dataDir);
      const delivered = streams.filter((s) => s.outcome === 'delivered');
      await eventually(async () => {
        const charges = await chargesByRequest(fleet);
        return (
          delivered.every((s) => charges.has(s.id!)) &&
          cut.every((s) => s.received <= 5 || charges.has(s.id!))
        );
      }, 'delivered calls and cut streams charged');
      const charges = await chargesByRequest(fleet);
      for (const s of delivered) {
        expect(charges.get(s.id!), `charges of ${s.id}`).toHaveLength(1);
        expect(charges.get(s.id!)![0]!.outputTokens).toBe(s.received);
      }
      // At most one interval of tokens (with slack for a timer late on a loaded machine) is lost;
      // never more charged than the client got, plus the few frames in flight at the kill.
      const interval = PROGRESS_MS / ITL_MS;
      let receivedTokens = 0;
      let chargedTokens = 0;
      for (const s of cut) {
        const list = charges.get(s.id!) ?? [];
        expect(list.length, `charges of cut ${s.id}`).toBeLessThanOrEqual(1);
        const out = list[0]?.outputTokens ?? 0;
        expect(out, `tokens charged for cut ${s.id}`).toBeGreaterThanOrEqual(s.received - 3 * interval);
        expect(out, `tokens charged for cut ${s.id}`).toBeLessThanOrEqual(s.received + interval);
        receivedTokens += s.received;
        chargedTokens += out;
      }
      console.log(
        `stream progress: ${cut.length} streams cut by the crash had delivered ${receivedTokens} tokens; ${chargedTokens} are charged`,
      );
      const r = fleet.redis.client();
      await eventually(
        async () => Number(await r.hget(`{a:${fleet.accountId}}:account`, 'held')) === 0,
        'nothing held',
      );
      for (const p of [again, b]) p.proc.kill('SIGTERM');
      expect(await Promise.all([again.exited, b.exited])).toEqual([0, 0]);
      await expectLedgerClean(r, [fleet.accountId]);
    } finally {
      await fleet.stop();
    }
  }, 90_000);
});

// Chaos: two proxy replicas (real processes) share Redis and one media folder and advance 20
// video jobs; one is SIGKILLed midway. Every job completes, none is lost: the dead replica's
// claimed jobs come due again when its claims lapse (VIDEO_CLAIM_MS) and the other takes them
// over. Each job is charged once and never refunded; the ledger check is clean.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { globalKeys } from '../../core/keyspace.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { usageRecords } from '../../core/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { eventually, startFleet } from './fleet.ts';

const VIDEO = 'Chaos/Video';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('video jobs across two replicas, one killed midway', () => {
  it('VID-1 VID-2 20 jobs all complete, none lost, each charged once; both replicas took part', async () => {
    const fleet = await startFleet({ credit: parseDecimalToNano('100') });
    const media = mkdtempSync(join(tmpdir(), 'mp-chaos-media-'));
    try {
      const r = fleet.redis.client();
      await new CatalogueStore(r).put({
        id: VIDEO,
        kind: 'video',
        pricing: { USD: { perSecond: '0.1' } },
        endpoints: fleet.sims.map((s) => ({ url: s.url })),
        created: 1,
      });
      for (const s of fleet.sims) s.setOptions({ videoQueueMs: 100, videoMsPerSecond: 1000 });
      const env = { VIDEO_POLL_MS: '100', VIDEO_CLAIM_MS: '1500', MEDIA_DIR: media };
      const a = await fleet.startProxy('a', env);
      const b = await fleet.startProxy('b', env);
      const client = new OpenAI({ apiKey: fleet.secret, baseURL: `${a.url}/v1`, maxRetries: 0 });
      const ids: string[] = [];
      for (let i = 0; i < 20; i++)
        ids.push((await client.videos.create({ model: VIDEO, prompt: `job ${i}`, seconds: '4' })).id);

      // Both replicas hold claims before one dies.
      const claimants = new Set<string>();
      for (let i = 0; i < 1_000 && claimants.size < 2; i++) {
        for (const token of Object.values(await r.hgetall(globalKeys.videoClaims))) claimants.add(token);
        await sleep(10);
      }
      expect(claimants.size).toBe(2);
      await sleep(200);
      b.proc.kill('SIGKILL');
      await b.exited;
      expect(await r.zcard(globalKeys.videosActive)).toBeGreaterThan(0); // work was left when it died

      let done: OpenAI.Videos.Video[] = [];
      await eventually(
        async () => {
          done = await Promise.all(ids.map((id) => client.videos.retrieve(id)));
          return done.every((j) => j.status === 'completed' || j.status === 'failed');
        },
        'every job finished',
        30_000,
      );
      expect(done.map((j) => j.status)).toEqual(ids.map(() => 'completed'));
      for (const id of ids.slice(0, 3)) {
        const res = await fetch(`${a.url}/v1/videos/${id}/content`, {
          headers: { authorization: `Bearer ${fleet.secret}` },
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('video/mp4');
      }
      const entries = await usageRecords(r, fleet.accountId, { count: 100 });
      expect(entries.filter((e) => e.type === 'charge' && e.kind === 'video')).toHaveLength(20);
      expect(entries.filter((e) => e.type === 'refund')).toHaveLength(0);
      // No job was sent to an engine twice, except one the killed replica may have sent in the
      // moment between the engine's answer and recording it (the engine has no idempotency key).
      let sent = 0;
      for (const sim of fleet.sims) {
        const engine = new OpenAI({ apiKey: 'unused', baseURL: `${sim.url}/v1`, maxRetries: 0 });
        for await (const _ of engine.videos.list({ limit: 100 })) sent++;
      }
      expect(sent).toBeGreaterThanOrEqual(20);
      expect(sent).toBeLessThanOrEqual(21);
      expect(await r.zcard(globalKeys.videosActive)).toBe(0);
      await expectLedgerClean(r, [fleet.accountId]);
    } finally {
      await fleet.stop();
      rmSync(media, { recursive: true, force: true });
    }
  }, 90_000);
});

// Chaos: two proxy replicas (real processes) share Redis and one media folder and advance 20
// video jobs; one is SIGKILLed midway. Every job completes, none is lost: the dead replica's
// claimed jobs come due again when its claims lapse (VIDEO_CLAIM_MS) and the other takes them
// over. Each job is sent to an engine exactly once (one engine job per job: a create resent after
// the kill carries the job's Idempotency-Key to the same engine), and no job is ever polled by two
// replicas at once — the engines log every poll with the replica that sent it. Each job is charged
// once and never refunded; the ledger check is clean.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { globalKeys } from '../../core/redis/keyspace.ts';
import { usageRecords } from '../../core/usage/usage.ts';
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
      const killedAt = Date.now();
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
      // Each job was made by an engine exactly once, whatever was resent.
      const made = fleet.sims.flatMap((sim) => sim.videoJobs());
      expect(made.map((j) => j.idempotencyKey).sort()).toEqual([...ids].sort());
      // Polls per job per replica. A job goes back to the queue between polls and either replica
      // may take the next one, but never both: consecutive polls of a job are a poll interval
      // apart (a job polled twice shows two polls within a few ms), and after the kill only the
      // survivor polls.
      const pollsBy = new Map<string, number>();
      const after = new Set<string>();
      for (const job of made) {
        const polls = [...job.polls].sort((x, y) => x.atMs - y.atMs);
        expect(polls.length).toBeGreaterThan(0);
        for (let i = 1; i < polls.length; i++)
          expect(
            polls[i]!.atMs - polls[i - 1]!.atMs,
            `${job.idempotencyKey} polled twice`,
          ).toBeGreaterThanOrEqual(Number(env.VIDEO_POLL_MS) / 2);
        for (const p of polls) {
          expect(p.by).not.toBe('');
          pollsBy.set(p.by, (pollsBy.get(p.by) ?? 0) + 1);
          if (p.atMs > killedAt + 200) after.add(p.by);
        }
      }
      expect(pollsBy.size).toBe(2); // both replicas polled
      expect(after.size).toBe(1); // then only the survivor
      expect(await r.zcard(globalKeys.videosActive)).toBe(0);
      await expectLedgerClean(r, [fleet.accountId]);
    } finally {
      await fleet.stop();
      rmSync(media, { recursive: true, force: true });
    }
  }, 90_000);
});

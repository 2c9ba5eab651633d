// Videos through the proxy (VID-*, BILL-4), with the official openai SDK against the real proxy,
// Redis and simulator engines: charged at creation, advanced by the proxy's video worker, the MP4
// copied into the store and served by a signed redirect, failed jobs refunded once.
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Metering } from '../../core/billing/index.ts';
import { VideoJobs } from '../../core/jobs/video-jobs.ts';
import { globalKeys } from '../../core/redis/keyspace.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { gradientPng } from '../../engines/simulator/media/png.ts';
import { VideoWorker } from '../../proxy/media/video-worker.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { scrapeMetrics } from '../helpers/metrics.ts';
import { type Harness, startHarness } from './harness.ts';

const VIDEO_MODEL = 'Vid/Maker';
const I2V_MODEL = 'Vid/From-Image';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    // Claims shorter than a slow engine's create (below): they must be renewed while it runs.
    {
      VIDEO_POLL_MS: '40',
      VIDEO_CLAIM_MS: '300',
      VIDEO_RETENTION_MS: '4000',
      MEDIA_SWEEP_INTERVAL_MS: '100',
    },
    {
      entries: (endpoints) => [
        {
          id: VIDEO_MODEL,
          kind: 'video',
          pricing: { USD: { perSecond: '0.1' } },
          endpoints,
          created: 1_700_000_000,
        },
        {
          id: I2V_MODEL,
          kind: 'video',
          pricing: { USD: { perSecond: '0.2' } },
          capabilities: { imageToVideo: true },
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
  for (const s of h.sims) s.setOptions({ videoQueueMs: 20, videoMsPerSecond: 30 });
});
afterAll(async () => {
  await h?.stop();
});

/** Polls `check` until it gives a value (or fails the test after `timeoutMs`). */
async function until<T>(check: () => Promise<T | undefined>, o: { timeoutMs: number }): Promise<T> {
  const end = Date.now() + o.timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function finished(client: OpenAI, id: string) {
  return until(
    async () => {
      const v = await client.videos.retrieve(id);
      return v.status === 'completed' || v.status === 'failed' ? v : undefined;
    },
    { timeoutMs: 15_000 },
  );
}

describe('videos', () => {
  it('VID-1 VID-5 BILL-4 create through the SDK (multipart, as openai 6.x sends it) → queued and charged at once → completed → the MP4 downloads without a key and ffprobe reads it', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const created = await client.videos.create({
      model: VIDEO_MODEL,
      prompt: 'a paper boat on a river',
      seconds: '4',
    });
    expect(created).toMatchObject({
      object: 'video',
      status: 'queued',
      model: VIDEO_MODEL,
      seconds: '4',
      completed_at: null,
      error: null,
    });
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({
      type: 'charge',
      kind: 'video',
      videoSeconds: 4,
      amount: 400_000_000,
      keyId: a.keyId,
    });
    const done = await finished(client, created.id);
    expect(done.status).toBe('completed');
    expect(done.progress).toBe(100);
    expect(done.expires_at! - done.completed_at!).toBe(4);
    const content = await client.videos.downloadContent(created.id);
    const bytes = Buffer.from(await content.arrayBuffer());
    const dir = mkdtempSync(join(tmpdir(), 'mp-video-'));
    try {
      writeFileSync(join(dir, 'v.mp4'), bytes);
      const probe = JSON.parse(
        execFileSync(
          'ffprobe',
          ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', join(dir, 'v.mp4')],
          {
            encoding: 'utf8',
          },
        ),
      ) as { format: { format_name: string }; streams: { codec_type: string }[] };
      expect(probe.format.format_name).toContain('mp4');
      expect(probe.streams.some((s) => s.codec_type === 'video')).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The redirect target needs no key.
    const redirect = await fetch(`${h.baseURL}/videos/${created.id}/content`, {
      headers: { authorization: `Bearer ${a.secret}` },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    const open = await fetch(redirect.headers.get('location')!);
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toBe('video/mp4');
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('VID-1 VID-5 BILL-4 create as JSON → queued and charged at once → completed → the content redirect serves the MP4', async () => {
    const a = await h.newAccount();
    const res = await fetch(`${h.baseURL}/videos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: VIDEO_MODEL, prompt: 'a json kite', seconds: '2', size: '640x360' }),
    });
    expect(res.status).toBe(200);
    const created = (await res.json()) as OpenAI.Videos.Video;
    expect(created).toMatchObject({
      object: 'video',
      status: 'queued',
      seconds: '2',
      size: '640x360',
      error: null,
    });
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', kind: 'video', videoSeconds: 2, amount: 200_000_000 });
    const done = await finished(h.client(a.secret), created.id);
    expect(done).toMatchObject({ status: 'completed', progress: 100 });
    // The engine was sent JSON with the served name, the prompt, seconds and size.
    const sent = h.sims
      .flatMap((sim) => sim.received())
      .filter(
        (r) =>
          r.path === '/v1/videos' && (r.json as { prompt?: string } | undefined)?.prompt === 'a json kite',
      );
    expect(sent).toHaveLength(1);
    expect(sent[0]!.json).toEqual({
      model: VIDEO_MODEL,
      prompt: 'a json kite',
      seconds: '2',
      size: '640x360',
    });
    expect(sent[0]!.headers['idempotency-key']).toBe(created.id);
    const redirect = await fetch(`${h.baseURL}/videos/${created.id}/content`, {
      headers: { authorization: `Bearer ${a.secret}` },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    const mp4 = Buffer.from(await (await fetch(redirect.headers.get('location')!)).arrayBuffer());
    expect(mp4.subarray(4, 8).toString('latin1')).toBe('ftyp');
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('VID-6 content stops after the retention (a clear 404) and the file is swept', async () => {
    const client = h.client();
    const v = await client.videos.create({ model: VIDEO_MODEL, prompt: 'short-lived', seconds: '4' });
    const before = await fetch(`${h.baseURL}/videos/${v.id}/content`, {
      headers: { authorization: `Bearer ${h.secret}` },
    });
    expect(before.status).toBe(404);
    expect(((await before.json()) as { error: { message: string } }).error.message).toMatch(
      /available once it has completed/,
    );
    await finished(client, v.id);
    const redirect = await fetch(`${h.baseURL}/videos/${v.id}/content`, {
      headers: { authorization: `Bearer ${h.secret}` },
      redirect: 'manual',
    });
    const link = redirect.headers.get('location')!;
    await new Promise((r) => setTimeout(r, 4_500));
    const after = await fetch(`${h.baseURL}/videos/${v.id}/content`, {
      headers: { authorization: `Bearer ${h.secret}` },
    });
    expect(after.status).toBe(404);
    expect(((await after.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
    expect((await fetch(link)).status).toBe(403); // the link expired with the retention
    await until(
      async () => ((await h.proxy.ctx.media.store.get(`videos/${v.id}.mp4`)) === null ? true : undefined),
      {
        timeoutMs: 5_000,
      },
    );
  });

  it('VID-1 image-to-video as multipart with input_reference; a model that cannot is 400 naming it', async () => {
    const form = (model: string) => {
      const fd = new FormData();
      fd.set('model', model);
      fd.set('prompt', 'bring it to life');
      fd.set('seconds', '2');
      fd.set(
        'input_reference',
        new Blob([new Uint8Array(gradientPng(30, 16, 16))], { type: 'image/png' }),
        'ref.png',
      );
      return fd;
    };
    const post = (fd: FormData) =>
      fetch(`${h.baseURL}/videos`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.secret}` },
        body: fd,
      });
    const ok = await post(form(I2V_MODEL));
    expect(ok.status).toBe(200);
    const v = (await ok.json()) as { id: string; status: string };
    expect(v.status).toBe('queued');
    expect((await finished(h.client(), v.id)).status).toBe('completed');
    const sent = h.sims
      .flatMap((s) => s.received())
      .filter((r) => r.path === '/v1/videos' && r.method === 'POST');
    expect(sent.some((r) => String(r.headers['content-type']).startsWith('multipart/form-data'))).toBe(true);
    const refused = await post(form(VIDEO_MODEL));
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { param: string } }).error.param).toBe('input_reference');
  });

  it('VID-1 the TypeScript SDK’s file stream (sent as application/octet-stream) is typed by its name; a non-image name is 400', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const dir = mkdtempSync(join(tmpdir(), 'mp-ref-'));
    writeFileSync(join(dir, 'ref.png'), gradientPng(40, 16, 16));
    writeFileSync(join(dir, 'ref.txt'), gradientPng(40, 16, 16));
    try {
      const v = await client.videos.create({
        model: I2V_MODEL,
        prompt: 'bring it to life',
        seconds: '4',
        input_reference: createReadStream(join(dir, 'ref.png')),
      });
      expect((await finished(client, v.id)).status).toBe('completed');
      const forwarded = h.sims
        .flatMap((s) => s.received())
        .filter(
          (r) =>
            r.path === '/v1/videos' && r.method === 'POST' && r.form?.fields.prompt === 'bring it to life',
        )
        .map((r) => r.form?.files[0]);
      expect(forwarded.at(-1)).toMatchObject({ name: 'input_reference', contentType: 'image/png' });
      const refused = await client.videos
        .create({
          model: I2V_MODEL,
          prompt: 'bring it to life',
          seconds: '4',
          input_reference: createReadStream(join(dir, 'ref.txt')),
        })
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ status: 400, param: 'input_reference' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('VID-3 list: 25 jobs with limit 10 come back each exactly once, newest first, with auto-pagination', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const ids: string[] = [];
    for (let i = 0; i < 25; i++)
      ids.push((await client.videos.create({ model: VIDEO_MODEL, prompt: `clip ${i}`, seconds: '4' })).id);
    const seen: string[] = [];
    for await (const v of client.videos.list({ limit: 10 })) seen.push(v.id);
    expect(seen).toEqual([...ids].reverse());
    const first = await client.videos.list({ limit: 10 });
    expect(first.data).toHaveLength(10);
    expect(first.has_more).toBe(true);
    const asc = await client.videos.list({ limit: 100, order: 'asc' });
    expect(asc.data.map((v) => v.id)).toEqual(ids);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('VID-2 a failed job (status failed) is refunded exactly once, and counted once in the refunds metric', async () => {
    const refundedMetric = `mp_proxy_credits_refunded_nano_total{model="${VIDEO_MODEL}",currency="USD"}`;
    const refundedBefore = (await scrapeMetrics(h.metricsURL)).get(refundedMetric) ?? 0;
    const a = await h.newAccount();
    const client = h.client(a.secret);
    for (const s of h.sims) s.setOptions({ failVideo: 1 });
    let id: string;
    let done: OpenAI.Videos.Video;
    try {
      id = (await client.videos.create({ model: VIDEO_MODEL, prompt: 'doomed', seconds: '4' })).id;
      done = await finished(client, id);
      expect(done.status).toBe('failed');
      // The engine's own failure, passed on as it said it.
      expect(done.error).toEqual({
        code: 'video_generation_failed',
        message: 'simulated video generation failure',
      });
    } finally {
      for (const s of h.sims) s.setOptions({ failVideo: 0 });
    }
    // Reporting the failure again changes and refunds nothing more.
    const job = (await h.proxy.videoWorker.jobs.get(a.accountId, id))!;
    expect(
      await h.proxy.videoWorker.jobs.fail(a.accountId, job, { code: 'again', message: 'again' }, (r) =>
        h.proxy.ctx.billing.refund(r, 'USD'),
      ),
    ).toBe(false);
    expect((await h.proxy.videoWorker.jobs.get(a.accountId, id))!.error_code).toBe(done.error!.code);
    const entries = await usageRecords(h.redis.client(), a.accountId, { count: 10 });
    expect(entries.filter((e) => e.type === 'refund')).toHaveLength(1);
    expect(entries.filter((e) => e.type === 'refund')[0]).toMatchObject({
      amount: 400_000_000,
      refundOf: `charge:${id}`,
    });
    expect((await scrapeMetrics(h.metricsURL)).get(refundedMetric)! - refundedBefore).toBe(400_000_000);
    expect((await h.metering.balance(a.accountId)).balance).toBe(100_000_000_000);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('VID-2 the failure-and-refund step fails once (Redis gone): the job is not left failed unrefunded; the retry fails and refunds it exactly once', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const jobs = h.proxy.videoWorker.jobs;
    const seen: (string | undefined)[] = [];
    const spy = vi.spyOn(jobs, 'fail').mockImplementationOnce(async (accountId, job) => {
      seen.push((await jobs.get(accountId, job.id!))?.status);
      throw new Error('the connection to Redis was lost');
    });
    for (const sim of h.sims) sim.setOptions({ failVideo: 1 });
    try {
      const { id } = await client.videos.create({ model: VIDEO_MODEL, prompt: 'fails twice', seconds: '4' });
      expect((await finished(client, id)).status).toBe('failed');
      expect(spy).toHaveBeenCalledTimes(2);
      // When the step threw, nothing had been written: no failed job without its refund.
      expect(seen).toEqual(['in_progress']);
      const entries = await usageRecords(h.redis.client(), a.accountId, { count: 10 });
      expect(entries.filter((e) => e.type === 'refund')).toEqual([
        expect.objectContaining({ amount: 400_000_000, refundOf: `charge:${id}` }),
      ]);
    } finally {
      spy.mockRestore();
      for (const sim of h.sims) sim.setOptions({ failVideo: 0 });
    }
    expect((await h.metering.balance(a.accountId)).balance).toBe(100_000_000_000);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('VID-1 a step longer than the claim (an engine slow to accept) keeps its claim: a second replica never sends the job again', async () => {
    const second = new VideoWorker({
      config: h.config,
      billing: h.proxy.ctx.billing,
      redis: h.redis.client(),
      catalogue: h.snapshot,
      engine: h.proxy.ctx.engine,
      store: h.proxy.ctx.media.store,
      metrics: h.proxy.ctx.metrics,
      log: h.proxy.app.log,
    });
    second.start();
    for (const sim of h.sims) sim.setOptions({ videoCreateMs: 1_000 }); // the claim is 300 ms
    try {
      const { id } = await h
        .client()
        .videos.create({ model: VIDEO_MODEL, prompt: 'slow to accept', seconds: '4' });
      expect((await finished(h.client(), id)).status).toBe('completed');
      const made = h.sims.flatMap((sim) => sim.videoJobs()).filter((j) => j.prompt === 'slow to accept');
      expect(made).toEqual([expect.objectContaining({ idempotencyKey: id, creates: 1 })]);
    } finally {
      for (const sim of h.sims) sim.setOptions({ videoCreateMs: 0 });
      await second.stop();
    }
  });

  it('VID-1 a create whose answer was lost is sent again to the same engine with the same Idempotency-Key: one engine job, charged once', async () => {
    const a = await h.newAccount();
    for (const sim of h.sims) sim.setOptions({ dropVideoCreates: 1 });
    try {
      const { id } = await h
        .client(a.secret)
        .videos.create({ model: VIDEO_MODEL, prompt: 'answer lost', seconds: '4' });
      expect((await finished(h.client(a.secret), id)).status).toBe('completed');
      const made = h.sims.flatMap((sim) => sim.videoJobs()).filter((j) => j.prompt === 'answer lost');
      expect(made).toEqual([expect.objectContaining({ idempotencyKey: id, creates: 2 })]);
    } finally {
      for (const sim of h.sims) sim.setOptions({ dropVideoCreates: 0 });
    }
    const entries = await usageRecords(h.redis.client(), a.accountId, { count: 10 });
    expect(entries.map((e) => e.type)).toEqual(['charge', 'topup']);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('BILL-4 a balance that cannot cover the seconds: 429 insufficient_quota and no job', async () => {
    const a = await h.newAccount({ credit: '0.45' });
    const client = h.client(a.secret);
    const err = await client.videos
      .create({ model: VIDEO_MODEL, prompt: 'too long', seconds: '8' })
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((await client.videos.list()).data).toEqual([]);
    expect((await client.videos.create({ model: VIDEO_MODEL, prompt: 'fits', seconds: '4' })).status).toBe(
      'queued',
    );
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it("VID-4 another account's job is a 404, like an unknown id; delete removes the job", async () => {
    const mine = await h.client().videos.create({ model: VIDEO_MODEL, prompt: 'mine', seconds: '4' });
    const other = await h.newAccount();
    for (const call of [
      () => h.client(other.secret).videos.retrieve(mine.id),
      () => h.client(other.secret).videos.delete(mine.id),
      () => h.client().videos.retrieve('video_0000000000000000'),
    ]) {
      const err = await call().catch((e: unknown) => e);
      expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(404);
    }
    expect(await h.client().videos.delete(mine.id)).toMatchObject({ id: mine.id, deleted: true });
    const gone = await h
      .client()
      .videos.retrieve(mine.id)
      .catch((e: unknown) => e);
    expect((gone as InstanceType<typeof OpenAI.APIError>).status).toBe(404);
  });

  it('/metrics: the queue depth rises to the jobs waiting and falls back as they finish; the oldest job ages; seconds and jobs counted', async () => {
    const scrape = async () => {
      const text = await (await fetch(h.metricsURL)).text();
      const value = (name: string) =>
        Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
      return {
        depth: value('mp_proxy_video_queue_depth'),
        oldest: value('mp_proxy_video_oldest_job_age_seconds'),
        seconds: value(`mp_proxy_video_seconds_total\\{model="${VIDEO_MODEL}"\\}`),
        completed: value(`mp_proxy_video_jobs_finished_total\\{model="${VIDEO_MODEL}",status="completed"\\}`),
      };
    };
    const r = h.redis.client();
    await until(async () => ((await r.zcard(globalKeys.videosActive)) === 0 ? true : undefined), {
      timeoutMs: 15_000,
    });
    const before = await scrape();
    expect(before).toMatchObject({ depth: 0, oldest: 0 });
    const client = h.client();
    await h.proxy.videoWorker.stop(); // nothing advances: the jobs wait in the queue
    const ids: string[] = [];
    try {
      for (let i = 0; i < 3; i++)
        ids.push(
          (await client.videos.create({ model: VIDEO_MODEL, prompt: `queued ${i}`, seconds: '4' })).id,
        );
      expect((await scrape()).depth).toBe(3);
      await new Promise((res) => setTimeout(res, 1_100));
      const waiting = await scrape();
      expect(waiting.depth).toBe(3);
      expect(waiting.oldest).toBeGreaterThanOrEqual(1);
      expect(waiting.seconds).toBe(before.seconds + 12);
    } finally {
      h.proxy.videoWorker.start();
    }
    for (const id of ids) expect((await finished(client, id)).status).toBe('completed');
    const after = await scrape();
    expect(after).toMatchObject({ depth: 0, oldest: 0, completed: before.completed + 3 });
  });

  it('VID-3 a list goes on after a job deleted meanwhile, from its place; an unknown `after` is a 400 naming it', async () => {
    const a = await h.newAccount();
    const client = h.client(a.secret);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await client.videos.create({ model: VIDEO_MODEL, prompt: `page ${i}`, seconds: '4' })).id);
    const first = await client.videos.list({ limit: 2 });
    expect(first.data.map((v) => v.id)).toEqual([ids[4], ids[3]]);
    await client.videos.delete(ids[3]!); // the page's last id, the next page's cursor
    const next = await client.videos.list({ limit: 2, after: ids[3]! });
    expect(next.data.map((v) => v.id)).toEqual([ids[2], ids[1]]);
    const asc = await client.videos.list({ order: 'asc', after: ids[3]! });
    expect(asc.data.map((v) => v.id)).toEqual([ids[4]]);
    const res = await fetch(`${h.baseURL}/videos?after=video_0000000000000000`, {
      headers: { authorization: `Bearer ${a.secret}` },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('after');
    // Another account's job is no cursor either.
    const other = await fetch(`${h.baseURL}/videos?after=${ids[0]}`, {
      headers: { authorization: `Bearer ${h.secret}` },
    });
    expect(other.status).toBe(400);
  });

  it('VID-3 jobs made within one millisecond list in the order they were made, newest first (not by their ids)', async () => {
    const a = await h.newAccount();
    const jobs = new VideoJobs(h.redis.client());
    const metering = new Metering(h.redis.client(), { now: () => 1_750_000_000_000 });
    // Ids whose alphabetical order is the opposite of the order they are made in.
    const made = ['video_fff', 'video_bbb', 'video_999', 'video_111'];
    for (const id of made) {
      const { ok } = await jobs.create(
        {
          accountId: a.accountId,
          keyId: a.keyId,
          requestId: `req_${id}`,
          id,
          model: VIDEO_MODEL,
          price: { perSecond: '0.1' },
          seconds: 1,
          size: '720x1280',
          currency: 'USD',
          prompt: id,
          inputRef: '',
        },
        (c) => metering.charge(c),
      );
      expect(ok).toBe(true);
    }
    const client = h.client(a.secret);
    expect((await client.videos.list()).data.map((v) => v.id)).toEqual([...made].reverse());
    expect((await client.videos.list({ order: 'asc' })).data.map((v) => v.id)).toEqual(made);
    const paged: string[] = [];
    for await (const v of client.videos.list({ limit: 1 })) paged.push(v.id);
    expect(paged).toEqual([...made].reverse());
  });

  it('bad input: seconds not a number, a chat model, JSON input_reference → 400 naming it, nothing charged', async () => {
    const a = await h.newAccount();
    const post = async (body: object) => {
      const res = await fetch(`${h.baseURL}/videos`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, error: ((await res.json()) as { error: { param: string } }).error };
    };
    expect(await post({ model: VIDEO_MODEL, prompt: 'x', seconds: 'four' })).toMatchObject({
      status: 400,
      error: { param: 'seconds' },
    });
    expect(await post({ model: 'Org/Chat-Model', prompt: 'x' })).toMatchObject({
      status: 400,
      error: { param: 'model' },
    });
    expect(await post({ model: VIDEO_MODEL, prompt: 'x', input_reference: 'a' })).toMatchObject({
      status: 400,
      error: { param: 'input_reference' },
    });
    expect(await post({ model: VIDEO_MODEL })).toMatchObject({ status: 400, error: { param: 'prompt' } });
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1);
  });
});

// Advances video jobs (VID-*): every replica runs one worker; each claims due jobs from the
// fleet-wide queue (core/jobs/video-jobs.ts) and renews a claim for as long as it works on that job (an
// engine slow to answer, a long MP4 copy), so one replica polls a job at a time and a dead
// replica's jobs are taken over once its claims lapse (VIDEO_CLAIM_MS). A job is sent to an
// engine, polled until it finishes, its MP4 copied into the object store (kept VIDEO_RETENTION_MS,
// then swept), and a failed job failed and refunded in one script, exactly once.
//
// A claim can still be lost while its holder works (a replica stalled, or cut off from Redis, for
// longer than VIDEO_CLAIM_MS): the holder stops when its renewal fails, and every step is safe to
// repeat by the replica that took over. The engine is asked to create a job with the job's id as
// `Idempotency-Key`, and always the engine it was first sent to, so a create resent after a crash
// or a lost answer makes no second engine job (engines that ignore the key are the gap: docs/api.md
// "Images and videos"); the MP4 goes to the same key; a finished job is never written again
// (completed stays completed, a failure after completion refunds nothing). Fencing every write by
// the claim instead would put the claim and the job in one script, two hash slots on Redis Cluster.
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { CatalogueEntry, CatalogueSnapshot } from '../../core/catalogue/index.ts';
import type { ProxyConfig as Config } from '../../core/config/index.ts';
import { type JobRecord, VideoJobs } from '../../core/jobs/video-jobs.ts';
import type { Redis } from '../../core/redis/client.ts';
import type { ObjectStore } from '../../core/storage/store.ts';
import type { Billing } from '../billing/billing.ts';
import type { EngineDeps } from '../engine/call.ts';
import { Cancel } from '../engine/cancel.ts';
import type { EngineResponse } from '../engine/client.ts';
import { formBody } from '../engine/form.ts';
import type { ProxyMetrics } from '../metrics/metrics.ts';
import { deleteLater } from './media-sweeper.ts';

/** Engine failures to sending a job before it is given up (failed and refunded). */
const MAX_ATTEMPTS = 5;

/** Jobs one replica works on at once. */
const MAX_IN_FLIGHT = 16;

/** Names the replica on its engine requests: an engine's log says who polled a job. */
export const REPLICA_HEADER = 'x-modelplane-replica';

export interface VideoWorkerDeps {
  config: Config;
  /** Refunds failed jobs: the replica's one billing door. */
  billing: Pick<Billing, 'refund'>;
  redis: Redis;
  catalogue: CatalogueSnapshot;
  engine: EngineDeps;
  store: ObjectStore;
  metrics: ProxyMetrics;
  log: FastifyBaseLogger;
}

interface EngineJob {
  id?: unknown;
  status?: unknown;
  progress?: unknown;
  error?: { code?: unknown; message?: unknown } | null;
}

/** Another replica took the job over (this one's renewal found the claim not ours). */
export class ClaimLostError extends Error {
  constructor(id: string) {
    super(`the claim on video ${id} was lost`);
    this.name = 'ClaimLostError';
  }
}

export class VideoWorker {
  readonly jobs: VideoJobs;
  /** This replica's name on its claims. */
  readonly token = randomBytes(8).toString('hex');
  private timer: NodeJS.Timeout | null = null;
  private claiming: Promise<void> | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly headers: Record<string, string>;
  /** Jobs this replica polled, for tests: `<videoId>` → polls. */
  readonly polled = new Map<string, number>();

  constructor(private readonly d: VideoWorkerDeps) {
    this.jobs = new VideoJobs(d.redis);
    this.headers = { [REPLICA_HEADER]: this.token };
  }

  start(): void {
    const every = Math.max(10, Math.floor(this.d.config.VIDEO_POLL_MS / 2));
    this.timer = setInterval(() => {
      if (this.claiming !== null) return;
      this.claiming = this.tick()
        .catch((err) => this.d.log.error({ err }, 'video worker'))
        .finally(() => {
          this.claiming = null;
        });
    }, every);
    this.timer.unref();
  }

  /** Stops claiming; what is being worked on finishes (its claims lapse if it cannot). */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.claiming;
    await Promise.all(this.inFlight);
  }

  /**
   * Claims due jobs and starts advancing each once, not waiting for them: one job's long step
   * (an MP4 copy) does not hold up the polls of the others.
   */
  async tick(): Promise<void> {
    const room = MAX_IN_FLIGHT - this.inFlight.size;
    if (room <= 0) return;
    const claimed = await this.jobs.claim(this.token, this.d.config.VIDEO_CLAIM_MS, room);
    for (const c of claimed) {
      const p: Promise<void> = this.advance(c.accountId, c.id).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }
  }

  private async advance(accountId: string, id: string): Promise<void> {
    const cancel = new Cancel();
    const stopRenewing = this.renewWhileWorking(accountId, id, cancel);
    let next = this.d.config.VIDEO_POLL_MS;
    try {
      const job = await this.jobs.get(accountId, id);
      if (job === null || job.status === 'completed' || job.status === 'failed') next = -1;
      else next = await this.step(accountId, job, cancel);
    } catch (err) {
      if (cancel.reason instanceof ClaimLostError) this.d.log.warn({ video: id }, 'video job taken over');
      else this.d.log.warn({ err, video: id }, 'video job step failed; trying again');
    } finally {
      stopRenewing();
    }
    await this.jobs.unclaim(accountId, id, this.token, next);
  }

  /** Renews the claim every third of its life; a claim found lost cancels the step's engine calls. */
  private renewWhileWorking(accountId: string, id: string, cancel: Cancel): () => void {
    const claimMs = this.d.config.VIDEO_CLAIM_MS;
    const timer = setInterval(
      () => {
        this.jobs.renew(accountId, id, this.token, claimMs).then(
          (ours) => {
            if (!ours) cancel.abort(new ClaimLostError(id));
          },
          (err: unknown) => this.d.log.warn({ err, video: id }, 'video claim renewal failed'),
        );
      },
      Math.max(10, Math.floor(claimMs / 3)),
    );
    timer.unref();
    return () => clearInterval(timer);
  }

  /** One step of a job; returns when to look again (ms), or -1 when it is finished. */
  private async step(accountId: string, job: JobRecord, cancel: Cancel): Promise<number> {
    const id = job.id!;
    this.polled.set(id, (this.polled.get(id) ?? 0) + 1);
    if (!job.engine_id) return this.create(accountId, job, cancel);
    const res = await this.d.engine.client.send(
      job.engine_url!,
      'GET',
      `/v1/videos/${job.engine_id}`,
      null,
      cancel,
      this.headers,
    );
    const text = (await res.body.bytes()).toString('utf8');
    if (res.statusCode === 404)
      return this.fail(accountId, job, 'video_generation_failed', 'the engine lost the job');
    if (res.statusCode >= 400) return this.retryOrFail(accountId, job, `engine answered ${res.statusCode}`);
    const view = JSON.parse(text) as EngineJob;
    if (view.status === 'failed') {
      return this.fail(
        accountId,
        job,
        String(view.error?.code ?? 'video_generation_failed'),
        String(view.error?.message ?? 'the video could not be generated'),
      );
    }
    if (view.status !== 'completed') {
      return (await this.jobs.update(accountId, id, progressOf(view))) === 'written'
        ? this.d.config.VIDEO_POLL_MS
        : -1;
    }
    return this.complete(accountId, job, cancel);
  }

  /**
   * Sends the job to an engine. The engine chosen is recorded first and asked again (with the
   * same Idempotency-Key) until it answers: it may have made the job before a crash or a lost
   * answer, and another engine would make a second one. Only an engine that refused the
   * connection (nothing was sent) is given up for another.
   */
  private async create(accountId: string, job: JobRecord, cancel: Cancel): Promise<number> {
    const id = job.id!;
    const entry = this.d.catalogue.get(job.model!);
    const urls = entry?.endpoints.map((e) => e.url) ?? [];
    let url = job.engine_url && urls.includes(job.engine_url) ? job.engine_url : null;
    url ??= urls.length > 0 ? this.d.engine.picker.pick(urls) : null;
    if (entry === undefined || url === null)
      return this.retryOrFail(accountId, job, 'no engine serves the model');
    if (url !== job.engine_url && (await this.jobs.update(accountId, id, { engine_url: url })) !== 'written')
      return -1;
    const release = this.d.engine.picker.acquire(url);
    let res: EngineResponse;
    let body: string;
    try {
      res = await this.sendCreate(url, job, entry, cancel);
      body = (await res.body.bytes()).toString('utf8');
    } catch (err) {
      if (cancel.aborted) throw cancel.reason;
      this.d.engine.health.recordFailure(url);
      if ((err as { code?: string }).code === 'ECONNREFUSED')
        await this.jobs.update(accountId, id, { engine_url: '' });
      return this.retryOrFail(accountId, job, err instanceof Error ? err.message : String(err));
    } finally {
      release();
    }
    if (res.statusCode >= 500) {
      this.d.engine.health.recordFailure(url);
      return this.retryOrFail(accountId, job, `engine answered ${res.statusCode}`);
    }
    this.d.engine.health.recordSuccess(url);
    let view: EngineJob & { error?: { message?: unknown } };
    try {
      view = JSON.parse(body) as typeof view;
    } catch {
      return this.retryOrFail(accountId, job, 'the engine sent an unreadable answer');
    }
    if (res.statusCode >= 400) {
      return this.fail(
        accountId,
        job,
        'video_generation_failed',
        String(view.error?.message ?? 'the engine refused the job'),
      );
    }
    const written = await this.jobs.update(accountId, id, {
      engine_id: String(view.id),
      ...progressOf(view),
    });
    return written === 'written' ? this.d.config.VIDEO_POLL_MS : -1;
  }

  /** JSON, or (image-to-video) multipart with the input_reference file, as engines take it. */
  private async sendCreate(
    url: string,
    job: JobRecord,
    entry: CatalogueEntry,
    cancel: Cancel,
  ): Promise<EngineResponse> {
    const headers = { ...this.headers, 'idempotency-key': job.id! };
    const fields = {
      model: entry.servedName ?? entry.id,
      prompt: job.prompt ?? '',
      seconds: job.seconds ?? '4',
      size: job.size ?? '',
    };
    const client = this.d.engine.client;
    if (!job.input_ref) return client.postJson(url, '/v1/videos', JSON.stringify(fields), cancel, headers);
    const o = await this.d.store.get(job.input_ref);
    if (o === null) throw new Error('the input reference is gone');
    const chunks: Buffer[] = [];
    for await (const c of o.body) chunks.push(c as Buffer);
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.set(k, v);
    fd.set(
      'input_reference',
      new Blob([new Uint8Array(Buffer.concat(chunks))], { type: o.contentType }),
      job.input_ref.slice(job.input_ref.lastIndexOf('/') + 1),
    );
    return client.send(url, 'POST', '/v1/videos', formBody(fd), cancel, headers);
  }

  private async complete(accountId: string, job: JobRecord, cancel: Cancel): Promise<number> {
    const id = job.id!;
    const content = await this.d.engine.client.send(
      job.engine_url!,
      'GET',
      `/v1/videos/${job.engine_id}/content`,
      null,
      cancel,
      this.headers,
    );
    if (content.statusCode !== 200) {
      await content.body.dump();
      return this.retryOrFail(accountId, job, `engine content answered ${content.statusCode}`);
    }
    const key = videoKey(id);
    // Streamed from the engine into the store, never whole in memory; a replica that takes the
    // job over writes the same key.
    await this.d.store.put(key, content.body.readable(), 'video/mp4');
    const now = Date.now();
    const expiresAt = now + this.d.config.VIDEO_RETENTION_MS;
    await deleteLater(this.d.redis, key, expiresAt);
    if (job.input_ref) await deleteLater(this.d.redis, job.input_ref, now);
    const result = await this.jobs.update(accountId, id, {
      status: 'completed',
      progress: 100,
      completed_at: Math.floor(now / 1000),
      expires_at: Math.floor(expiresAt / 1000),
    });
    if (result === 'gone') await this.d.store.delete(key); // deleted while it rendered
    if (result === 'written') this.finished(job, 'completed');
    return -1;
  }

  private async fail(accountId: string, job: JobRecord, code: string, message: string): Promise<number> {
    const failed = await this.jobs.fail(accountId, job, { code, message }, (r) =>
      this.d.billing.refund(r, job.currency ?? ''),
    );
    if (job.input_ref) await deleteLater(this.d.redis, job.input_ref, Date.now());
    if (failed) this.finished(job, 'failed');
    return -1;
  }

  private async retryOrFail(accountId: string, job: JobRecord, why: string): Promise<number> {
    const attempts = Number(job.attempts ?? 0) + 1;
    if (attempts >= MAX_ATTEMPTS)
      return this.fail(accountId, job, 'video_generation_failed', `the engine kept failing: ${why}`);
    if ((await this.jobs.update(accountId, job.id!, { attempts })) !== 'written') return -1;
    return this.d.config.VIDEO_POLL_MS * 2 ** attempts;
  }

  private finished(job: JobRecord, status: 'completed' | 'failed'): void {
    this.d.metrics.videoJobs.inc({ model: job.model ?? '', status });
    this.d.metrics.videoJobSeconds.observe(
      { model: job.model ?? '' },
      Math.max(0, Date.now() / 1000 - Number(job.created_at)),
    );
  }
}

export const videoKey = (id: string) => `videos/${id}.mp4`;

function progressOf(v: EngineJob): Record<string, string | number> {
  const status = v.status === 'in_progress' ? 'in_progress' : 'queued';
  const progress = typeof v.progress === 'number' ? Math.max(0, Math.min(99, Math.floor(v.progress))) : 0;
  return { status, progress };
}

// Advances video jobs (VID-*): every replica runs one worker; each claims due jobs from the
// fleet-wide queue (./video-jobs.ts), so one replica polls a job at a time and a dead replica's
// jobs are taken over once its claims lapse (VIDEO_CLAIM_MS). A job is sent to an engine, polled
// until it finishes, its MP4 copied into the object store (kept VIDEO_RETENTION_MS, then swept),
// and a failed job refunded exactly once (the refund's id is the job's).

import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { CatalogueSnapshot } from '../../core/catalogue/index.ts';
import type { Config } from '../../core/config.ts';
import type { ObjectStore } from '../../core/storage/store.ts';
import { type CallOptions, callEngine, type EngineDeps } from '../engine/call.ts';
import { Cancel } from '../engine/cancel.ts';
import { formBody } from '../engine/form.ts';
import type { ProxyMetrics } from '../plugins/metrics.ts';
import { deleteLater } from './media-sweeper.ts';
import { type JobRecord, VideoJobs } from './video-jobs.ts';

/** Engine failures to sending a job before it is given up (failed and refunded). */
const MAX_ATTEMPTS = 5;

export interface VideoWorkerDeps {
  config: Config;
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

export class VideoWorker {
  readonly jobs: VideoJobs;
  /** This replica's name on its claims. */
  readonly token = randomBytes(8).toString('hex');
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private readonly cancel = new Cancel();
  /** Jobs this replica polled, for tests: `<videoId>` → polls. */
  readonly polled = new Map<string, number>();

  constructor(private readonly d: VideoWorkerDeps) {
    this.jobs = new VideoJobs(d.redis);
  }

  start(): void {
    const every = Math.max(10, Math.floor(this.d.config.VIDEO_POLL_MS / 2));
    this.timer = setInterval(() => {
      if (this.running !== null) return;
      this.running = this.tick()
        .catch((err) => this.d.log.error({ err }, 'video worker'))
        .finally(() => {
          this.running = null;
        });
    }, every);
    this.timer.unref();
  }

  /** Stops claiming; what is being handled finishes (its claims lapse if it cannot). */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Claims the due jobs and advances each once. */
  async tick(): Promise<void> {
    const claimed = await this.jobs.claim(this.token, this.d.config.VIDEO_CLAIM_MS, 16);
    await Promise.all(claimed.map((c) => this.advance(c.accountId, c.id)));
  }

  private async advance(accountId: string, id: string): Promise<void> {
    let next = this.d.config.VIDEO_POLL_MS;
    try {
      const job = await this.jobs.get(accountId, id);
      if (job === null || job.status === 'completed' || job.status === 'failed') next = -1;
      else next = await this.step(accountId, job);
    } catch (err) {
      this.d.log.warn({ err, video: id }, 'video job step failed; trying again');
    }
    await this.jobs.unclaim(accountId, id, this.token, next);
  }

  /** One step of a job; returns when to look again (ms), or -1 when it is finished. */
  private async step(accountId: string, job: JobRecord): Promise<number> {
    const id = job.id!;
    this.polled.set(id, (this.polled.get(id) ?? 0) + 1);
    const entry = this.d.catalogue.get(job.model!);
    if (!job.engine_id) {
      if (entry === undefined || entry.endpoints.length === 0)
        return this.retryOrFail(accountId, job, 'no engine serves the model');
      try {
        const call = await callEngine(this.d.engine, {
          entry,
          path: '/v1/videos',
          payload: await this.createPayload(job, entry.servedName ?? entry.id),
          cancel: this.cancel,
          tried: new Set(),
        });
        const body = await call.body.bytes().finally(() => call.release());
        const view = JSON.parse(body.toString('utf8')) as EngineJob & { error?: { message?: unknown } };
        if (call.statusCode >= 400) {
          return this.fail(
            accountId,
            job,
            'video_generation_failed',
            String(view.error?.message ?? 'the engine refused the job'),
          );
        }
        await this.jobs.update(accountId, id, {
          engine_url: call.url,
          engine_id: String(view.id),
          ...progressOf(view),
        });
        return this.d.config.VIDEO_POLL_MS;
      } catch (err) {
        return this.retryOrFail(accountId, job, err instanceof Error ? err.message : String(err));
      }
    }
    const res = await this.d.engine.client.send(
      job.engine_url!,
      'GET',
      `/v1/videos/${job.engine_id}`,
      null,
      this.cancel,
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
      await this.jobs.update(accountId, id, progressOf(view));
      return this.d.config.VIDEO_POLL_MS;
    }
    return this.complete(accountId, job);
  }

  private async complete(accountId: string, job: JobRecord): Promise<number> {
    const id = job.id!;
    const content = await this.d.engine.client.send(
      job.engine_url!,
      'GET',
      `/v1/videos/${job.engine_id}/content`,
      null,
      this.cancel,
    );
    if (content.statusCode !== 200) {
      await content.body.dump();
      return this.retryOrFail(accountId, job, `engine content answered ${content.statusCode}`);
    }
    const key = videoKey(id);
    // Streamed from the engine into the store, never whole in memory.
    await this.d.store.put(key, content.body.readable(), 'video/mp4');
    const now = Date.now();
    const expiresAt = now + this.d.config.VIDEO_RETENTION_MS;
    await deleteLater(this.d.redis, key, expiresAt);
    if (job.input_ref) await deleteLater(this.d.redis, job.input_ref, now);
    const kept = await this.jobs.update(accountId, id, {
      status: 'completed',
      progress: 100,
      completed_at: Math.floor(now / 1000),
      expires_at: Math.floor(expiresAt / 1000),
    });
    if (!kept) await this.d.store.delete(key); // deleted while it rendered
    this.finished(job, 'completed');
    return -1;
  }

  private async fail(accountId: string, job: JobRecord, code: string, message: string): Promise<number> {
    await this.jobs.update(accountId, job.id!, {
      status: 'failed',
      error_code: code,
      error_message: message,
    });
    await this.jobs.refund(accountId, job);
    if (job.input_ref) await deleteLater(this.d.redis, job.input_ref, Date.now());
    this.finished(job, 'failed');
    return -1;
  }

  private async retryOrFail(accountId: string, job: JobRecord, why: string): Promise<number> {
    const attempts = Number(job.attempts ?? 0) + 1;
    if (attempts >= MAX_ATTEMPTS)
      return this.fail(accountId, job, 'video_generation_failed', `the engine kept failing: ${why}`);
    await this.jobs.update(accountId, job.id!, { attempts });
    return this.d.config.VIDEO_POLL_MS * 2 ** attempts;
  }

  private finished(job: JobRecord, status: 'completed' | 'failed'): void {
    this.d.metrics.videoJobs.inc({ model: job.model ?? '', status });
    this.d.metrics.videoJobSeconds.observe(
      { model: job.model ?? '' },
      Math.max(0, Date.now() / 1000 - Number(job.created_at)),
    );
  }

  /** JSON, or (image-to-video) multipart with the input_reference file, as engines take it. */
  private async createPayload(job: JobRecord, model: string): Promise<CallOptions['payload']> {
    const fields = { model, prompt: job.prompt ?? '', seconds: job.seconds ?? '4', size: job.size ?? '' };
    if (!job.input_ref) return JSON.stringify(fields);
    const o = await this.d.store.get(job.input_ref);
    if (o === null) throw new Error('the input reference is gone');
    const chunks: Buffer[] = [];
    for await (const c of o.body) chunks.push(c as Buffer);
    const file = new Blob([new Uint8Array(Buffer.concat(chunks))], { type: o.contentType });
    return () => {
      const fd = new FormData();
      for (const [k, v] of Object.entries(fields)) fd.set(k, v);
      fd.set('input_reference', file, job.input_ref!.slice(job.input_ref!.lastIndexOf('/') + 1));
      return formBody(fd);
    };
  }
}

export const videoKey = (id: string) => `videos/${id}.mp4`;

function progressOf(v: EngineJob): Record<string, string | number> {
  const status = v.status === 'in_progress' ? 'in_progress' : 'queued';
  const progress = typeof v.progress === 'number' ? Math.max(0, Math.min(99, Math.floor(v.progress))) : 0;
  return { status, progress };
}

// Video jobs. A job's status is a pure function of its creation time and the timing captured then:
// queued for queueMs, then in_progress for seconds × msPerSecond (progress 0..99), then completed
// (or failed halfway, when failure was injected). No timers run; the MP4 is rendered on first
// download and kept with the job.

import { randomBytes } from 'node:crypto';
import { hash53 } from '../hash.ts';
import { renderVideo } from '../media/video.ts';

export type VideoStatus = 'queued' | 'in_progress' | 'completed' | 'failed';

const RETENTION_SECONDS = 7 * 24 * 3600;

export interface VideoJob {
  id: string;
  model: string;
  prompt: string;
  seconds: number;
  size: string;
  width: number;
  height: number;
  createdAtMs: number;
  queueMs: number;
  renderMs: number;
  willFail: boolean;
  /** Seed material from an input image (image-to-video), else ''. */
  salt: string;
  mp4?: Buffer;
  /** The client's `Idempotency-Key`, if it sent one: a create with the same key gets this job. */
  idempotencyKey?: string;
  /** Creates that named this job: the first, and each replay of its idempotency key. */
  creates: number;
  /** Each GET of the job, with who sent it (the `x-modelplane-replica` header, else ''). */
  polls: { atMs: number; by: string }[];
}

export interface VideoView {
  id: string;
  object: 'video';
  model: string;
  status: VideoStatus;
  progress: number;
  prompt: string;
  seconds: string;
  size: string;
  created_at: number;
  completed_at: number | null;
  expires_at: number | null;
  error: { code: string; message: string } | null;
  remixed_from_video_id: null;
  quality: 'standard';
}

export class VideoJobs {
  private readonly jobs = new Map<string, VideoJob>();
  /** Idempotency-Key → job id. */
  private readonly byKey = new Map<string, string>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly limit = 1000,
  ) {}

  /** A new job, or the job made earlier with the same `idempotencyKey` (counted as a replay). */
  create(input: Omit<VideoJob, 'id' | 'createdAtMs' | 'creates' | 'polls'>): VideoJob {
    const earlier = input.idempotencyKey === undefined ? undefined : this.byKey.get(input.idempotencyKey);
    const replayed = earlier === undefined ? undefined : this.jobs.get(earlier);
    if (replayed !== undefined) {
      replayed.creates++;
      return replayed;
    }
    const job: VideoJob = {
      ...input,
      id: `video_${randomBytes(12).toString('hex')}`,
      createdAtMs: this.now(),
      creates: 1,
      polls: [],
    };
    this.jobs.set(job.id, job);
    if (input.idempotencyKey !== undefined) this.byKey.set(input.idempotencyKey, job.id);
    while (this.jobs.size > this.limit) {
      const oldest = this.jobs.keys().next().value;
      if (oldest === undefined) break;
      this.delete(oldest);
    }
    return job;
  }

  get(id: string): VideoJob | undefined {
    return this.jobs.get(id);
  }

  delete(id: string): boolean {
    const key = this.jobs.get(id)?.idempotencyKey;
    if (key !== undefined) this.byKey.delete(key);
    return this.jobs.delete(id);
  }

  /** Every job, oldest first. */
  all(): VideoJob[] {
    return [...this.jobs.values()];
  }

  /** Newest first unless order is asc; cursor is the last id of the previous page. */
  list(opts: { after?: string; limit: number; order: 'asc' | 'desc' }): {
    jobs: VideoJob[];
    hasMore: boolean;
  } {
    const all = [...this.jobs.values()];
    if (opts.order === 'desc') all.reverse();
    const start = opts.after ? all.findIndex((j) => j.id === opts.after) + 1 : 0;
    const page = all.slice(start, start + opts.limit);
    return { jobs: page, hasMore: start + opts.limit < all.length };
  }

  view(job: VideoJob): VideoView {
    const elapsed = this.now() - job.createdAtMs;
    const doneAfter = job.queueMs + job.renderMs;
    const failAfter = job.queueMs + job.renderMs / 2;
    let status: VideoStatus;
    let progress: number;
    if (job.willFail && elapsed >= failAfter) {
      status = 'failed';
      progress = 50;
    } else if (elapsed >= doneAfter) {
      status = 'completed';
      progress = 100;
    } else if (elapsed >= job.queueMs) {
      status = 'in_progress';
      progress = Math.min(99, Math.floor((100 * (elapsed - job.queueMs)) / Math.max(1, job.renderMs)));
    } else {
      status = 'queued';
      progress = 0;
    }
    const completedAt = status === 'completed' ? Math.floor((job.createdAtMs + doneAfter) / 1000) : null;
    return {
      id: job.id,
      object: 'video',
      model: job.model,
      status,
      progress,
      prompt: job.prompt,
      seconds: String(job.seconds),
      size: job.size,
      created_at: Math.floor(job.createdAtMs / 1000),
      completed_at: completedAt,
      expires_at: completedAt === null ? null : completedAt + RETENTION_SECONDS,
      error:
        status === 'failed'
          ? { code: 'video_generation_failed', message: 'simulated video generation failure' }
          : null,
      remixed_from_video_id: null,
      quality: 'standard',
    };
  }

  hue(job: VideoJob): number {
    return hash53(`${job.prompt}\u0000${job.salt}`) % 360;
  }

  content(job: VideoJob): Buffer {
    job.mp4 ??= renderVideo({
      hue: this.hue(job),
      seconds: job.seconds,
      width: job.width,
      height: job.height,
    });
    return job.mp4;
  }
}

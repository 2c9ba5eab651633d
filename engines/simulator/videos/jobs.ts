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

  constructor(
    private readonly now: () => number = Date.now,
    private readonly limit = 1000,
  ) {}

  create(input: Omit<VideoJob, 'id' | 'createdAtMs'>): VideoJob {
    const job: VideoJob = {
      ...input,
      id: `video_${randomBytes(12).toString('hex')}`,
      createdAtMs: this.now(),
    };
    this.jobs.set(job.id, job);
    while (this.jobs.size > this.limit) {
      const oldest = this.jobs.keys().next().value;
      if (oldest === undefined) break;
      this.jobs.delete(oldest);
    }
    return job;
  }

  get(id: string): VideoJob | undefined {
    return this.jobs.get(id);
  }

  delete(id: string): boolean {
    return this.jobs.delete(id);
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

// Background responses (POST /v1/responses with background: true): the call runs as a job on the
// replica that accepted it, detached from the client, and its state is durable in Redis so any
// replica answers for it — GET polls it, POST …/cancel cancels it, GET ?stream=true replays its
// events from a sequence number.
//
// The job is not a second money path: it is the same POST, streamed, run by the route through
// fastify's inject with the request's own key (./background-run.ts), so it goes
// through the one metered call and relay exactly as a client's stream does — one hold, one
// settlement, billed for what was generated however it ends. This file keeps what a job is beyond
// that call:
// - its events, one list element per event (element i is sequence number i), pushed in order on
//   the connection that then writes its status, so a reader that sees a final status reads every
//   event after it;
// - its lease, renewed while this replica runs it: a job whose replica died is failed by whoever
//   reads it after the lease lapsed (its hold is voided or billed by the sweeper, as any call's);
// - its cancel flag, which any replica sets and the running replica acts on (at once when it runs
//   the job itself, else at its next renewal): the call is ended as shutdown ends one, so it
//   settles what it delivered, exactly once.
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../../core/errors.ts';
import type { Redis } from '../../core/redis/client.ts';
import type { Billing } from '../billing/billing.ts';
import type { Echo } from '../dialects/responses/response.ts';

/** The header that names a job to the request that runs it (a one-use token known only in memory). */
export const JOB_HEADER = 'x-modelplane-background-job';

/** How long a job's lease lasts unrenewed, and how often its replica renews it (and reads its cancel flag). */
export const LEASE_MS = 15_000;
const RENEW_MS = 1_000;
/** Events are kept a day: replay is for a client that lost its stream, not an archive. */
export const EVENTS_TTL_S = 24 * 3600;

export type JobStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';
export const isFinal = (s: string | null): boolean =>
  s === 'completed' || s === 'incomplete' || s === 'failed' || s === 'cancelled';

/** The reason a cancelled job's call is ended with (never shown: the job's stream says cancelled). */
export const cancelledCall = () => new ApiError('server_error', 'The response was cancelled.');

export interface BackgroundJob {
  accountId: string;
  echo: Echo;
  /** The conversation before this response's output, as JSON (what is stored with it). */
  conversation: string;
  /** The request id of the call that runs it, once it has started. */
  requestId: string | null;
  cancelled: boolean;
  /** Its final state is written. */
  finished: boolean;
}

const jobKey = (accountId: string, id: string) => `responses:{${accountId}}:${id}:job`;
const eventsKey = (accountId: string, id: string) => `responses:{${accountId}}:${id}:events`;

export class BackgroundResponses {
  private readonly byToken = new Map<string, BackgroundJob>();
  private readonly running = new Set<BackgroundJob>();
  /** Events recorded and not yet pushed, per job (pushed together once the current read is handled). */
  private readonly unpushed = new Map<BackgroundJob, string[]>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly billing: Pick<Billing, 'abortCall'>,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** A new job: its status and lease in Redis, and the one-use token the call that runs it presents. */
  async admit(job: BackgroundJob): Promise<string> {
    const key = jobKey(job.accountId, job.echo.id);
    await this.redis
      .multi()
      .hset(key, { status: 'queued', lease: Date.now() + LEASE_MS, cancel: 0 })
      .expire(key, EVENTS_TTL_S)
      .exec();
    const token = randomBytes(24).toString('hex');
    this.byToken.set(token, job);
    this.running.add(job);
    this.timer ??= setInterval(() => this.renew(), RENEW_MS).unref();
    return token;
  }

  /** The job a token names, once (the call that runs it takes it). */
  claim(token: unknown, requestId: string): BackgroundJob | undefined {
    if (typeof token !== 'string') return undefined;
    const job = this.byToken.get(token);
    this.byToken.delete(token);
    if (job !== undefined) job.requestId = requestId;
    return job;
  }

  /** Events the job's stream made (whole SSE blocks), pushed soon, in order. */
  record(job: BackgroundJob, events: string): void {
    const blocks = events.split('\n\n').filter((b) => b !== '');
    if (blocks.length === 0) return;
    const pending = this.unpushed.get(job);
    if (pending !== undefined) {
      pending.push(...blocks);
      return;
    }
    this.unpushed.set(job, blocks);
    setImmediate(() => this.push(job));
  }

  /** The job's status (after the events recorded so far, on the same connection). */
  setStatus(job: BackgroundJob, status: JobStatus): void {
    this.push(job);
    if (isFinal(status)) {
      job.finished = true;
      this.running.delete(job);
    }
    this.redis
      .hset(jobKey(job.accountId, job.echo.id), 'status', status)
      .catch((err: unknown) =>
        this.log.error({ err, responseId: job.echo.id }, 'writing a job status failed'),
      );
    // A cancel that came before the call's charge was open: end the call now that it runs.
    if (job.cancelled && !job.finished) this.endCall(job);
  }

  private push(job: BackgroundJob): void {
    const blocks = this.unpushed.get(job);
    if (blocks === undefined) return;
    this.unpushed.delete(job);
    const key = eventsKey(job.accountId, job.echo.id);
    this.redis
      .multi()
      .rpush(key, ...blocks)
      .expire(key, EVENTS_TTL_S)
      .exec()
      .catch((err: unknown) => this.log.error({ err, responseId: job.echo.id }, 'recording events failed'));
  }

  /** A job's status, and whether its lease lapsed (its replica died) while it was not final. */
  async state(accountId: string, id: string): Promise<{ status: string | null; lapsed: boolean }> {
    const [status = null, lease = null] = await this.redis.hmget(jobKey(accountId, id), 'status', 'lease');
    const lapsed = status !== null && !isFinal(status) && Number(lease) < Date.now();
    return { status, lapsed };
  }

  /** Events from sequence number `from` on. */
  events(accountId: string, id: string, from: number): Promise<string[]> {
    return this.redis.lrange(eventsKey(accountId, id), from, -1);
  }

  /** Asks for the job to be cancelled: at once when this replica runs it, else at its replica's next renewal. */
  async cancel(accountId: string, id: string): Promise<void> {
    await this.redis.hset(jobKey(accountId, id), 'cancel', 1);
    for (const job of this.running)
      if (job.accountId === accountId && job.echo.id === id) this.cancelLocal(job);
  }

  /** Marks a lapsed job failed, once (the first reader to see its lease lapsed). */
  async failLapsed(accountId: string, id: string): Promise<boolean> {
    const key = jobKey(accountId, id);
    const set = await this.redis.hsetnx(key, 'lapsed', 1);
    if (set === 1) await this.redis.hset(key, 'status', 'failed');
    return set === 1;
  }

  forget(accountId: string, id: string): Promise<number> {
    return this.redis.del(jobKey(accountId, id), eventsKey(accountId, id));
  }

  private cancelLocal(job: BackgroundJob): void {
    if (job.finished) return;
    job.cancelled = true;
    this.endCall(job);
  }

  private endCall(job: BackgroundJob): void {
    if (job.requestId !== null) this.billing.abortCall(job.requestId, cancelledCall());
  }

  /** Renews the leases of the jobs running here, and acts on cancels other replicas set. */
  private renew(): void {
    if (this.running.size === 0) {
      if (this.timer !== null) clearInterval(this.timer);
      this.timer = null;
      return;
    }
    for (const job of this.running) {
      const key = jobKey(job.accountId, job.echo.id);
      this.redis
        .multi()
        .hset(key, 'lease', Date.now() + LEASE_MS)
        .hget(key, 'cancel')
        .exec()
        .then((replies) => {
          if (replies?.[1]?.[1] === '1') this.cancelLocal(job);
        })
        .catch((err: unknown) =>
          this.log.warn({ err, responseId: job.echo.id }, 'renewing a job lease failed'),
        );
    }
  }

  /** The job ended without its stream finishing it (refused, or cancelled before the engine answered). */
  ended(job: BackgroundJob): void {
    this.running.delete(job);
  }
}

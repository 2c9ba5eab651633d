// Background responses, the HTTP side (./background-responses.ts holds their state): the
// POST that starts one answers the queued response at once (or, with stream: true, its events as
// they are made) and runs the call through fastify's inject — the same POST, streamed, with the
// request's own key, so the one metered call and relay bill it; GET ?stream=true replays its
// events from a sequence number; POST …/cancel cancels it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import type { ResponseStore } from '../../core/jobs/response-store.ts';
import { RecordingTranslator } from '../dialects/responses/recording.ts';
import { ResponseJson } from '../dialects/responses/response-json.ts';
import type { FinishedResponse } from '../dialects/responses/stream.ts';
import type { TextDialect } from '../dialects/translator.ts';
import { whenClosed } from '../reply-closed.ts';
import {
  type BackgroundJob,
  type BackgroundResponses,
  isFinal,
  JOB_HEADER,
  LEASE_MS,
} from './background-responses.ts';
import { openEventStream } from './event-stream.ts';

/** How often a replay looks for new events of a job still running. */
const REPLAY_POLL_MS = 50;

/** Two JSON arrays as one (`[a…]` then `[b…]`), without parsing either. */
export function appendJson(a: string, b: string): string {
  if (a === '[]') return b;
  if (b === '[]') return a;
  return `${a.slice(0, -1)},${b.slice(1)}`;
}

/** A job's state as stored: what GET answers while it runs, and once it ended. */
function saveState(store: ResponseStore, job: BackgroundJob, response: FinishedResponse): Promise<unknown> {
  return store.save(job.accountId, job.echo.id, {
    response: response.json,
    items: appendJson(job.conversation, response.output),
  });
}

/** Queues a background response and starts its call; answers the queued response (or its stream). */
export async function startBackground(
  app: FastifyInstance,
  jobs: BackgroundResponses,
  store: ResponseStore,
  request: FastifyRequest,
  reply: FastifyReply,
  job: BackgroundJob,
  stream: boolean,
): Promise<FastifyReply> {
  const queued = new ResponseJson(job.echo).render('queued', [], null);
  await saveState(store, job, { json: queued, output: '[]', status: 'queued' });
  const token = await jobs.admit(job);
  app
    .inject({
      method: 'POST',
      url: request.url,
      headers: {
        authorization: request.headers.authorization ?? '',
        'content-type': 'application/json',
        [JOB_HEADER]: token,
      },
      payload: JSON.stringify(request.body),
    })
    .then(async (res) => {
      if (job.finished) return;
      // Ended before its stream could finish it: refused (e.g. 429), or cancelled before the engine answered.
      jobs.ended(job);
      const error = job.cancelled ? null : errorOf(res.body);
      const status = job.cancelled ? 'cancelled' : 'failed';
      const json = new ResponseJson(job.echo).render(status, [], zeroUsage, error);
      await saveState(store, job, { json, output: '[]', status });
      jobs.setStatus(job, status);
    })
    .catch((err: unknown) =>
      request.log.error({ err, responseId: job.echo.id }, 'a background response failed'),
    );
  if (stream) return replay(jobs, store, request, reply, job.accountId, job.echo.id, -1);
  return reply.type('application/json').send(queued);
}

const zeroUsage = { inputTokens: 0, cachedTokens: 0, outputTokens: 0 };

function errorOf(body: string): { code: string; message: string } {
  try {
    const e = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } }).error;
    return { code: 'server_error', message: typeof e?.message === 'string' ? e.message : 'The call failed.' };
  } catch {
    return { code: 'server_error', message: 'The call failed.' };
  }
}

/** The job a request runs, if it is a background job's call (its token, known only in memory here). */
export function jobOf(jobs: BackgroundResponses, request: FastifyRequest): BackgroundJob | undefined {
  const token = request.headers[JOB_HEADER];
  if (token === undefined) return undefined;
  const job = jobs.claim(token, request.id);
  if (job === undefined) throw invalidRequest(`${JOB_HEADER} is not a header clients send.`);
  if (job.cancelled) throw new ApiError('server_error', 'The response was cancelled before it started.');
  return job;
}

/** A job's dialect: the Responses translator, recording its events and writing its state. */
export function jobDialect<A>(
  jobs: BackgroundResponses,
  store: ResponseStore,
  job: BackgroundJob,
  dialect: TextDialect<A>,
  log: FastifyRequest['log'],
): TextDialect<A> {
  const failed = (err: unknown) =>
    log.error({ err, responseId: job.echo.id }, 'storing a background response failed');
  return {
    ...dialect,
    translator: () =>
      new RecordingTranslator(job.echo, {
        record: (events) => jobs.record(job, events),
        started: () => {
          const json = new ResponseJson(job.echo).render('in_progress', [], null);
          saveState(store, job, { json, output: '[]', status: 'in_progress' }).catch(failed);
          jobs.setStatus(job, 'in_progress');
        },
        finished: (response) => {
          saveState(store, job, response).catch(failed);
          jobs.setStatus(job, response.status);
        },
        cancelled: () => job.cancelled,
      }),
  };
}

/**
 * The job's events after sequence number `after`, then each new one as it is made, until the job
 * ended (its status final, read before the events, so every event is sent). A job whose replica
 * died (lease lapsed) is failed here.
 */
export async function replay(
  jobs: BackgroundResponses,
  store: ResponseStore,
  request: FastifyRequest,
  reply: FastifyReply,
  accountId: string,
  id: string,
  after: number,
): Promise<FastifyReply> {
  const res = openEventStream(reply);
  let gone = false;
  whenClosed(reply, () => {
    gone = true;
  });
  let next = after + 1;
  try {
    while (!gone) {
      const { status, lapsed } = await jobs.state(accountId, id);
      if (lapsed) await failLapsed(jobs, store, accountId, id);
      const events = await jobs.events(accountId, id, next);
      next += events.length;
      if (events.length > 0) res.write(`${events.join('\n\n')}\n\n`);
      if (lapsed || status === null || isFinal(status)) break;
      await new Promise((r) => setTimeout(r, REPLAY_POLL_MS));
    }
  } catch (err) {
    request.log.error({ err, responseId: id }, 'replaying a background response failed');
  }
  res.end();
  return reply;
}

/** A job whose replica died: failed (once), its stored state saying so. */
export async function failLapsed(
  jobs: BackgroundResponses,
  store: ResponseStore,
  accountId: string,
  id: string,
): Promise<void> {
  if (!(await jobs.failLapsed(accountId, id))) return;
  const stored = await store.get(accountId, id);
  if (stored === null) return;
  const response = {
    ...stored.response,
    status: 'failed',
    error: { code: 'server_error', message: 'The replica running this response stopped.' },
  };
  const items = JSON.stringify(stored.items);
  await store.save(accountId, id, { response: JSON.stringify(response), items });
}

/** A stored response, a background one whose replica died failed first. */
export async function current(
  jobs: BackgroundResponses,
  store: ResponseStore,
  accountId: string,
  id: string,
) {
  const stored = await store.get(accountId, id);
  if (stored === null || stored.response.background !== true || isFinal(stored.response.status as string))
    return stored;
  if (!(await jobs.state(accountId, id)).lapsed) return stored;
  await failLapsed(jobs, store, accountId, id);
  return store.get(accountId, id);
}

/** A cancelled response once its call ended (a cancel reaches another replica's job within a second or so). */
export async function settledState(
  jobs: BackgroundResponses,
  store: ResponseStore,
  accountId: string,
  id: string,
) {
  for (let waited = 0; waited < 2 * LEASE_MS; waited += 50) {
    const stored = await current(jobs, store, accountId, id);
    if (stored === null || isFinal(stored.response.status as string)) return stored;
    await new Promise((r) => setTimeout(r, 50));
  }
  return store.get(accountId, id);
}

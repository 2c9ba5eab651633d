// Creating a video job (VID-*, BILL-4) through the one metered lifecycle (./metered.ts): charged
// seconds × price at creation, in the script that records the job, through the replica's billing —
// so the outbox gate refuses it like any billable call and it counts in the credits metric. 429
// insufficient_quota (or the key's spend limit): no job. A job that fails later is refunded by the
// video worker, through the same billing (Billing.refund).
//
// The job's id is minted here, and its input_reference (image-to-video) copied from the upload
// spool into the store under that id before the charge; a creation that fails for any reason
// deletes the copy, so only a created job has a reference kept. Deleting a job deletes its files.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { videoCost } from '../../core/billing/index.ts';
import type { CatalogueEntry, VideoPrice } from '../../core/catalogue/index.ts';
import { insufficientQuota, keySpendLimitReached } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { JobRecord, VideoJobs } from '../../core/jobs/video-jobs.ts';
import { COST_HEADER } from '../billing/call-cost.ts';
import type { ProxyContext } from '../context.ts';
import type { SpooledFile } from '../media/upload-form.ts';
import { referenceKey, storeReference } from '../media/video-reference.ts';
import { videoView } from '../media/video-view.ts';
import { videoKey } from '../media/video-worker.ts';
import { meteredCall, type Quote } from './metered.ts';

/** Charged at once, whole: no hold is made of it (the quote is what the charge will be). */
export function videoQuote(price: VideoPrice, seconds: number): Quote {
  const cost = videoCost(price, seconds);
  return { min: cost, max: cost, full: 1, allowance: (held) => (held >= cost ? 1 : 0) };
}

export interface VideoCreate {
  entry: CatalogueEntry;
  price: VideoPrice;
  seconds: number;
  size: string;
  prompt: string;
  /** The spooled input_reference image (checked already), or undefined for a text-to-video job. */
  reference: SpooledFile | undefined;
}

/** POST /v1/videos: a new job, its reference kept, charged at creation; answered with the job. */
export async function createVideo(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  jobs: VideoJobs,
  v: VideoCreate,
): Promise<FastifyReply> {
  const id = newId('video');
  const inputRef = v.reference === undefined ? '' : referenceKey(id, v.reference);
  try {
    if (v.reference !== undefined) await storeReference(ctx.media.store, inputRef, v.reference);
    return await videoCall(ctx, request, reply, jobs, { ...v, id, inputRef });
  } catch (err) {
    if (inputRef !== '') await ctx.media.store.delete(inputRef).catch(() => {});
    throw err;
  }
}

/** DELETE /v1/videos/{id}: the job, then its MP4 and its reference. */
export async function deleteVideo(
  ctx: ProxyContext,
  jobs: VideoJobs,
  accountId: string,
  job: JobRecord,
): Promise<void> {
  await jobs.delete(accountId, job.id!);
  await ctx.media.store.delete(videoKey(job.id!));
  if (job.input_ref) await ctx.media.store.delete(job.input_ref);
}

function videoCall(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  jobs: VideoJobs,
  v: VideoCreate & { id: string; inputRef: string },
): Promise<FastifyReply> {
  return meteredCall(ctx, request, reply, {
    kind: 'video',
    model: v.entry.id,
    quote: videoQuote(v.price, v.seconds),
    now: async (charge) => {
      const { ok, job, keyLimit } = await jobs.create(
        {
          accountId: request.principal.accountId,
          keyId: request.principal.keyId,
          requestId: request.id,
          id: v.id,
          model: v.entry.id,
          price: v.price,
          seconds: v.seconds,
          size: v.size,
          prompt: v.prompt,
          inputRef: v.inputRef,
          currency: request.principal.currency ?? '',
        },
        (c) => charge.chargeNow(c),
      );
      if (!ok)
        throw keyLimit === null
          ? insufficientQuota()
          : keySpendLimitReached(keyLimit, request.principal.currency);
      // The job says what its creation charged (../media/video-view.ts): the cost it recorded,
      // the amount the script just charged.
      const view = videoView(job, request.principal.currency);
      return () => {
        ctx.metrics.videoSeconds.inc({ model: v.entry.id }, v.seconds);
        if (view.usage !== undefined) reply.header(COST_HEADER, view.usage.cost);
        reply.send(view);
      };
    },
  });
}

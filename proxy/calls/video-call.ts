// Creating a video job (VID-*, BILL-4) through the one metered lifecycle (./metered.ts): charged
// seconds × price at creation, in the script that records the job, through the replica's billing —
// so the outbox gate refuses it like any billable call and it counts in the credits metric. 429
// insufficient_quota (or the key's spend limit): no job. A job that fails later is refunded by the
// video worker, through the same billing (Billing.refund).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { videoCost } from '../../core/billing/index.ts';
import type { CatalogueEntry, VideoPrice } from '../../core/catalogue/index.ts';
import { insufficientQuota, keySpendLimitReached } from '../../core/errors.ts';
import type { VideoJobs } from '../../core/video-jobs.ts';
import { COST_HEADER } from '../billing/call-cost.ts';
import type { ProxyContext } from '../context.ts';
import { videoView } from '../media/video-view.ts';
import { meteredCall, type Quote } from './metered.ts';

/** Charged at once, whole: no hold is made of it (the quote is what the charge will be). */
export function videoQuote(price: VideoPrice, seconds: number): Quote {
  const cost = videoCost(price, seconds);
  return { min: cost, max: cost, full: 1, allowance: (held) => (held >= cost ? 1 : 0) };
}

export function videoCall(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  jobs: VideoJobs,
  v: {
    id: string;
    entry: CatalogueEntry;
    price: VideoPrice;
    seconds: number;
    size: string;
    prompt: string;
    inputRef: string;
  },
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

// What a batch shows its client, pure: a line's stored result (./runner.ts writes it once), the
// output and error files in OpenAI's line format, Anthropic's results lines, and the batch objects
// of both APIs from the stored record.
import { createHash } from 'node:crypto';
import type { RecordFields } from '../../core/jobs/listed-records.ts';
import { formatNano } from '../../core/money.ts';
import type { CallUsage } from '../usage.ts';

/** A line's result as stored: what its call answered, what it used and cost (0 when it failed). */
export interface LineResult {
  custom_id: string;
  status_code: number;
  request_id: string;
  body: unknown;
  usage: CallUsage | null;
  cost: number;
}

export const isSuccess = (r: LineResult) => r.status_code >= 200 && r.status_code < 300;

/** How a line that never ran ended. */
export type Unrun = 'cancelled' | 'expired';

/** A line's id in the output (stable: finalizing again writes the same files). */
export function lineId(batchId: string, index: number): string {
  return `batch_req_${createHash('sha256').update(`${batchId}:${index}`).digest('hex').slice(0, 24)}`;
}

export function openAiLine(batchId: string, index: number, r: LineResult): string {
  return JSON.stringify({
    id: lineId(batchId, index),
    custom_id: r.custom_id,
    response: { status_code: r.status_code, request_id: r.request_id, body: r.body },
    error: null,
  });
}

export function openAiUnrunLine(batchId: string, index: number, customId: string, why: Unrun): string {
  const error =
    why === 'expired'
      ? {
          code: 'batch_expired',
          message: 'This request could not be executed before the completion window expired.',
        }
      : { code: 'batch_cancelled', message: 'This request was not executed: the batch was cancelled.' };
  return JSON.stringify({ id: lineId(batchId, index), custom_id: customId, response: null, error });
}

export function anthropicLine(r: LineResult): string {
  const result = isSuccess(r)
    ? { type: 'succeeded', message: r.body }
    : { type: 'errored', error: errorBody(r) };
  return JSON.stringify({ custom_id: r.custom_id, result });
}

function errorBody(r: LineResult): unknown {
  const b = r.body as { type?: unknown; error?: unknown } | null;
  if (b !== null && typeof b === 'object' && b.type === 'error') return b;
  return { type: 'error', error: { type: 'api_error', message: `The request failed (${r.status_code}).` } };
}

export function anthropicUnrunLine(customId: string, why: Unrun): string {
  return JSON.stringify({
    custom_id: customId,
    result: { type: why === 'expired' ? 'expired' : 'canceled' },
  });
}

const seconds = (v: string | undefined): number | null => (v === undefined || v === '' ? null : Number(v));

/** OpenAI's Batch object. */
export function openAiBatch(r: RecordFields) {
  return {
    id: r.id!,
    object: 'batch' as const,
    endpoint: r.endpoint ?? '',
    errors: r.errors ? { object: 'list' as const, data: JSON.parse(r.errors) } : null,
    input_file_id: r.input_file_id ?? '',
    completion_window: r.completion_window ?? '24h',
    status: r.status as 'validating',
    output_file_id: r.output_file_id || null,
    error_file_id: r.error_file_id || null,
    created_at: Number(r.created_at),
    in_progress_at: seconds(r.in_progress_at),
    expires_at: seconds(r.expires_at),
    finalizing_at: seconds(r.finalizing_at),
    completed_at: seconds(r.completed_at),
    failed_at: seconds(r.failed_at),
    expired_at: seconds(r.expired_at),
    cancelling_at: seconds(r.cancelling_at),
    cancelled_at: seconds(r.cancelled_at),
    request_counts: {
      total: Number(r.total ?? 0),
      completed: Number(r.completed ?? 0),
      failed: Number(r.failed ?? 0),
    },
    metadata: r.metadata ? (JSON.parse(r.metadata) as Record<string, string>) : null,
    model: r.model || null,
    usage: r.currency ? { cost: formatNano(Number(r.charged ?? 0)), currency: r.currency } : null,
  };
}

const iso = (s: string | undefined): string | null =>
  s === undefined || s === '' ? null : new Date(Number(s) * 1000).toISOString();

/** Anthropic's Message Batch object; `resultsUrl` where its results are read. */
export function anthropicBatch(r: RecordFields, resultsUrl: string) {
  const ended = r.ended_at !== undefined && r.ended_at !== '';
  const succeeded = Number(r.completed ?? 0);
  const errored = Number(r.failed ?? 0);
  const canceled = Number(r.unrun_cancelled ?? 0);
  const expired = Number(r.unrun_expired ?? 0);
  return {
    id: r.id!,
    type: 'message_batch' as const,
    processing_status: ended ? 'ended' : r.status === 'cancelling' ? 'canceling' : 'in_progress',
    request_counts: {
      processing: ended ? 0 : Math.max(0, Number(r.total ?? 0) - succeeded - errored),
      succeeded,
      errored,
      canceled,
      expired,
    },
    ended_at: iso(r.ended_at),
    created_at: iso(r.created_at)!,
    expires_at: iso(r.expires_at)!,
    archived_at: null,
    cancel_initiated_at: iso(r.cancelling_at),
    results_url: ended ? resultsUrl : null,
  };
}

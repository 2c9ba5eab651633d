// Schemas of OpenAI's Files and Batch APIs and Anthropic's Message Batches, as their SDKs send
// and read them (the source of /openapi.json too).
import { z } from 'zod';
import { OPENAI_BATCH_ENDPOINTS } from '../../core/endpoints.ts';

export const fileObject = z.object({
  id: z.string(),
  object: z.literal('file'),
  bytes: z.number().int(),
  created_at: z.number().int(),
  filename: z.string(),
  purpose: z.string(),
  status: z.literal('processed'),
  status_details: z.null(),
  expires_at: z.number().int().nullable(),
});

export const fileList = z.object({
  object: z.literal('list'),
  data: z.array(fileObject),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

export const fileListQuery = z.object({
  after: z.string().max(64).optional().describe('A file id: the page starts after it'),
  limit: z.coerce.number().int().min(1).max(10_000).optional().describe('1 to 10,000, default 10,000'),
  order: z.enum(['asc', 'desc']).optional().describe('By creation time; default desc (newest first)'),
  purpose: z.string().max(32).optional().describe('Only files of this purpose'),
});

export const idParams = z.object({ id: z.string().min(1).max(64) });

export const fileDeleted = z.object({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) });

/** The endpoints OpenAI's Batch API runs (the endpoint table's, core/endpoints.ts). */
export const batchEndpoints = OPENAI_BATCH_ENDPOINTS;

export const batchCreateRequest = z.strictObject({
  input_file_id: z.string().min(1).max(64),
  endpoint: z.enum(batchEndpoints),
  completion_window: z.literal('24h'),
  metadata: z.record(z.string().max(64), z.string().max(512)).nullish(),
  output_expires_after: z
    .looseObject({})
    .optional()
    .describe('Accepted; outputs are kept as other files are'),
});

const requestCounts = z.object({
  total: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
});

const batchError = z.object({
  code: z.string(),
  message: z.string(),
  param: z.string().nullable(),
  line: z.number().int().nullable(),
});

export const batchObject = z.object({
  id: z.string(),
  object: z.literal('batch'),
  endpoint: z.string(),
  errors: z.object({ object: z.literal('list'), data: z.array(batchError) }).nullable(),
  input_file_id: z.string(),
  completion_window: z.string(),
  status: z.enum([
    'validating',
    'failed',
    'in_progress',
    'finalizing',
    'completed',
    'expired',
    'cancelling',
    'cancelled',
  ]),
  output_file_id: z.string().nullable(),
  error_file_id: z.string().nullable(),
  created_at: z.number().int(),
  in_progress_at: z.number().int().nullable(),
  expires_at: z.number().int().nullable(),
  finalizing_at: z.number().int().nullable(),
  completed_at: z.number().int().nullable(),
  failed_at: z.number().int().nullable(),
  expired_at: z.number().int().nullable(),
  cancelling_at: z.number().int().nullable(),
  cancelled_at: z.number().int().nullable(),
  request_counts: requestCounts,
  metadata: z.record(z.string(), z.string()).nullable(),
  model: z.string().nullable().describe('The model of the batch lines (the first line names it)'),
  usage: z
    .looseObject({ cost: z.string(), currency: z.string() })
    .nullable()
    .describe('What the batch has been charged so far (service extension)'),
});

export const batchList = z.object({
  object: z.literal('list'),
  data: z.array(batchObject),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

export const batchListQuery = z.object({
  after: z.string().max(64).optional().describe('A batch id: the page starts after it'),
  limit: z.coerce.number().int().min(1).max(100).optional().describe('1 to 100, default 20'),
});

/** Anthropic's Message Batches create body: each request's params are a Messages request, checked line by line. */
export const messageBatchCreateRequest = z.strictObject({
  requests: z
    .array(z.strictObject({ custom_id: z.string().min(1).max(64), params: z.looseObject({}) }))
    .min(1),
});

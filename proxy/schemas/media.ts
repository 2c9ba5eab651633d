// Request and response schemas of the media routes (images, videos), chat-completions dialect.
// They validate requests and are the source of /openapi.json.
import { z } from 'zod';
import { callCost } from './cost.ts';
import { modelId } from './openai.ts';

export const imageN = z.coerce
  .number({ error: 'n must be an integer between 1 and 10' })
  .int('n must be an integer between 1 and 10')
  .min(1, 'n must be an integer between 1 and 10')
  .max(10, 'n must be an integer between 1 and 10');

export const responseFormat = z
  .enum(['url', 'b64_json'])
  .describe('url (default): a signed link valid for MEDIA_IMAGE_TTL_MS');

export const imageGenerationRequest = z
  .looseObject({
    model: modelId,
    prompt: z.string().min(1).max(32_000),
    n: z.number().int().min(1).max(10).nullish().describe('1 to 10 (SPEC "Limits")'),
    size: z.string().max(32).nullish().describe('WIDTHxHEIGHT or auto, passed to the engine'),
    quality: z.string().max(32).nullish(),
    style: z.string().max(32).nullish(),
    response_format: responseFormat.nullish(),
    user: z.string().max(256).nullish(),
  })
  .describe('Fields not listed are passed to the engine unchanged.');
export type ImageGenerationRequest = z.infer<typeof imageGenerationRequest>;

export const imagesResponse = z.object({
  created: z.number().int(),
  data: z.array(
    z.object({
      url: z.string().optional().describe('Signed; needs no API key; expires'),
      b64_json: z.string().optional().describe('The PNG, base64'),
      revised_prompt: z.string().optional(),
    }),
  ),
  usage: callCost.describe('What the images cost'),
});

/** The multipart fields of an edit, as the form sends them (files are streamed, not in this schema). */
export const imageEditFields = z.object({
  model: modelId,
  prompt: z.string().min(1).max(32_000),
  n: imageN.optional(),
  size: z.string().max(32).optional(),
  quality: z.string().max(32).optional(),
  response_format: responseFormat.optional(),
  user: z.string().max(256).optional(),
});
export type ImageEditFields = z.infer<typeof imageEditFields>;

export const imageEditForm = z
  .object({
    image: z
      .string()
      .describe('One image file (binary); or repeat `image[]` up to 10 files, each at most 20 MB'),
    'image[]': z.array(z.string()).max(10).optional().describe('Several image files (binary)'),
    mask: z.string().optional().describe('A PNG mask (binary)'),
    ...imageEditFields.shape,
  })
  .describe('multipart/form-data');

export const VIDEO_STATUSES = ['queued', 'in_progress', 'completed', 'failed'] as const;

export const videoObject = z.object({
  id: z.string(),
  object: z.literal('video'),
  model: z.string(),
  status: z.enum(VIDEO_STATUSES),
  progress: z.number().int().min(0).max(100),
  created_at: z.number().int(),
  completed_at: z.number().int().nullable(),
  expires_at: z.number().int().nullable().describe('When the MP4 is deleted (seven days after completion)'),
  seconds: z.string(),
  size: z.string(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  usage: callCost
    .optional()
    .describe('What the job’s creation charged (a failed job’s refund is its own entry)'),
});
export type VideoObject = z.infer<typeof videoObject>;

export const videoCreateFields = z.object({
  model: modelId,
  prompt: z.string().min(1).max(32_000),
  seconds: z
    .string()
    .regex(/^\d{1,3}(\.\d{1,3})?$/, 'seconds is a string such as "4"')
    .optional()
    .describe('A string, as OpenAI takes it; default "4"'),
  size: z
    .string()
    .regex(/^\d{2,5}x\d{2,5}$/, 'size is WIDTHxHEIGHT')
    .optional(),
});

export const videoCreateRequest = videoCreateFields.describe(
  'JSON, or multipart/form-data with the same fields and an optional input_reference image file (image-to-video models)',
);

/** The multipart form of a create: the same fields, and an image for image-to-video models. */
export const videoCreateForm = z
  .object({
    ...videoCreateFields.shape,
    input_reference: z
      .string()
      .optional()
      .describe(
        'An image file (binary; PNG, JPEG, WebP or GIF, at most 20 MB) the video starts from, for image-to-video models',
      ),
  })
  .describe('multipart/form-data');

export const videoList = z.object({
  object: z.literal('list'),
  data: z.array(videoObject),
  first_id: z.string().nullable(),
  last_id: z.string().nullable(),
  has_more: z.boolean(),
});

export const videoListQuery = z.object({
  after: z.string().max(64).optional().describe('A video id: the page starts after it'),
  limit: z.coerce.number().int().min(1).max(100).optional().describe('1 to 100, default 20'),
  order: z.enum(['asc', 'desc']).optional().describe('By creation time; default desc (newest first)'),
});

export const videoParams = z.object({ id: z.string().min(1).max(64) });

export const videoDeleted = z.object({
  id: z.string(),
  object: z.literal('video.deleted'),
  deleted: z.literal(true),
});

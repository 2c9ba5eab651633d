// The fields an error body carries when a key's spend limit (its budget for a UTC day, week or
// month) refused the call (core/errors.ts keySpendLimitReached), in both dialects' error objects,
// so /openapi.json names them and a client can act on them: wait for the reset or switch keys.
import { z } from 'zod';

export const budgetRefusalFields = {
  limit_source: z
    .enum(['key'])
    .optional()
    .describe("Whose spend limit refused the call (insufficient_quota only): 'key', the API key's"),
  limit_window: z
    .enum(['day', 'week', 'month'])
    .optional()
    .describe("The spend limit's window: a UTC day, an ISO week from Monday 00:00 UTC, or a UTC month"),
  resets_at: z
    .string()
    .optional()
    .describe('When the window ends and the key may spend again (RFC 3339, UTC)'),
};

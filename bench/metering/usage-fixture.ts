// One call's usage as the journal benches write it: a chat call of typical size.
import type { UsageRecord } from '../../core/billing/index.ts';

export const benchUsage = (cachedTokens: number): UsageRecord => ({
  keyId: 'key_0123456789abcdef',
  model: 'Meta-Llama/Llama-3.1-8B-Instruct',
  kind: 'chat',
  inputTokens: 1_234,
  cachedTokens,
  outputTokens: 321,
  requestId: 'req_0123456789abcdef01234567',
});

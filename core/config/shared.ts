// Settings every service reads (proxy, console, CLI; the operator reads REDIS_URL): Redis, the
// money's keepers (./money.ts), key secrets, logs, JSON bodies. Each variable is listed in
// docs/operations.md "Configuration" with the services that use it, and a test holds that table to
// these schemas (./owners.test.ts).
import { z } from 'zod';
import { moneyConfig } from './money.ts';
import { redisUrl } from './values.ts';

export const sharedConfig = {
  REDIS_URL: redisUrl,
  ...moneyConfig.shape,
  /** The brand word in new key secrets: `sk-<brand>-` + 48 hex. */
  MODELPLANE_BRAND: z
    .string()
    .regex(/^[a-z0-9]{1,32}$/, 'lowercase letters and digits only')
    .default('service'),
  /** Key-encryption key for stored secrets (Show Key): 32 bytes as 64 hex characters. */
  MODELPLANE_KEK: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes); generate with: openssl rand -hex 32'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Deepest JSON nesting a request body may have (a deeper one is a 400 naming the limit). */
  PROXY_JSON_MAX_DEPTH: z.coerce.number().int().min(8).max(1_000).default(64),
  /** Replicas WAIT must confirm before a settlement counts as done; 0 = the primary's reply is enough. */
  REDIS_WAIT_REPLICAS: z.coerce.number().int().min(0).max(16).default(0),
  /**
   * How long a request-path Redis command may take before the call gets a retryable 500
   * (Retry-After): a hung Redis (stopped, partitioned without a reset) must not hang calls.
   */
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(50).default(2_000),
  /** How long one WAIT may take before the settlement is retried. */
  REDIS_WAIT_TIMEOUT_MS: z.coerce.number().int().min(1).default(1_000),
  /** `production` makes a missing PROXY_PUBLIC_URL a start-up error (signed links need an origin). */
  NODE_ENV: z.string().default('development'),
};

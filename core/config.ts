// Typed configuration, parsed once from the environment at start-up. Every variable is listed in
// README.md "Configuration". A bad value stops the process with a message naming the variable.
import { z } from 'zod';

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const csv = z
  .string()
  .default('')
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

const schema = z.object({
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
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
  PROXY_HOST: z.string().default('0.0.0.0'),
  PROXY_PORT: port(8080),
  /** Origins allowed to call the API from a browser (the console's Playground). */
  PROXY_CORS_ORIGINS: csv,
  /** How long a key lookup (valid or not) is cached in a proxy's memory. */
  PROXY_KEY_CACHE_MS: z.coerce.number().int().min(0).default(5_000),
  /** Hold lifetime: a hold older than this (a crashed proxy) is released by the sweeper. */
  HOLD_TTL_MS: z.coerce.number().int().positive().default(600_000),
});

export type Config = z.infer<typeof schema> & { kek: Buffer };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`invalid configuration:\n${problems}`);
  }
  return { ...parsed.data, kek: Buffer.from(parsed.data.MODELPLANE_KEK, 'hex') };
}

// Typed configuration, parsed once from the environment at start-up. Every variable is listed in
// docs/operations.md "Configuration". A bad value stops the process with a message naming the variable.
import { z } from 'zod';
import { moneyConfig } from './config-money.ts';
import { routingConfig } from './config-routing.ts';
import { csv, port, redisUrl, trustedProxies } from './config-values.ts';
import { parseDecimalToNano } from './money.ts';

const schema = z.object({
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
  PROXY_HOST: z.string().default('0.0.0.0'),
  PROXY_PORT: port(8080),
  /** Origins allowed to call the API from a browser (the console's Playground). */
  PROXY_CORS_ORIGINS: csv,
  /** How long a key lookup (valid or not) is cached in a proxy's memory. */
  PROXY_KEY_CACHE_MS: z.coerce.number().int().min(0).default(5_000),
  /** Largest request body accepted (chat prompts may carry base64 images). */
  PROXY_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024),
  /** Keep-alive connections per engine endpoint (one undici Pool each). */
  PROXY_ENGINE_CONNECTIONS: z.coerce.number().int().positive().default(256),
  /** Time allowed for an engine to send response headers; a stall is retried elsewhere. */
  PROXY_ENGINE_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
  /** Longest silence allowed inside an engine response body (between stream frames). */
  PROXY_ENGINE_BODY_TIMEOUT_MS: z.coerce.number().int().positive().default(300_000),
  /** Endpoints tried per request when an engine fails before its first byte. */
  PROXY_ENGINE_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  /** How long an endpoint that keeps failing is skipped before it is tried again. */
  PROXY_ENGINE_COOLDOWN_MS: z.coerce.number().int().min(0).default(5_000),
  /** Leading prompt characters hashed for engine affinity (prefix-cache hits); 0 turns it off. */
  PROXY_PREFIX_AFFINITY_CHARS: z.coerce.number().int().min(0).default(0),
  /** Bounded load for affinity: an endpoint may carry at most this factor times the mean load. */
  PROXY_AFFINITY_LOAD_FACTOR: z.coerce.number().min(1).default(1.25),
  ...routingConfig,
  /**
   * Tracing (proxy/tracing/): off unless an OTLP/HTTP collector is named. The standard variable,
   * the collector's base URL; spans go to <endpoint>/v1/traces.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** The service name traces are filed under (the standard variable). */
  OTEL_SERVICE_NAME: z.string().min(1).default('modelplane-proxy'),
  /** Share of API requests traced, 0 to 1 (a client's own traceparent is ignored: it cannot force it). */
  PROXY_TRACE_SAMPLE_RATIO: z.coerce.number().min(0).max(1).default(1),
  /**
   * Reserve credits concurrently with the engine call when the account's last known available
   * balance is at least this many times the hold; 0 always reserves first.
   */
  PROXY_CONCURRENT_RESERVE_FACTOR: z.coerce.number().min(0).default(20),
  /** Output bound for holds when neither the request nor the model gives one. */
  PROXY_DEFAULT_MAX_TOKENS: z.coerce.number().int().positive().default(4096),
  /** Time allowed for a request's headers to arrive (slowloris, silent sockets). */
  PROXY_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(15_000),
  /** Time allowed for a whole request (headers and body) to arrive; a slower upload gets 408. */
  PROXY_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(120_000),
  /** An idle keep-alive connection is closed after this long. */
  PROXY_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(65_000),
  /**
   * A stream whose client stops reading for this long is ended (engine call aborted, the generated
   * part billed); so is a large reply or a /files download (proxy/plugins/write-stall.ts).
   */
  PROXY_STREAM_STALL_MS: z.coerce.number().int().min(100).default(30_000),
  /** Deepest JSON nesting a request body may have (a deeper one is a 400 naming the limit). */
  PROXY_JSON_MAX_DEPTH: z.coerce.number().int().min(8).max(1_000).default(64),
  /** Messages streams: a `ping` event after this long without a write (a slow or thinking engine). */
  PROXY_MESSAGES_PING_MS: z.coerce.number().int().positive().default(5000),
  /**
   * Stored Responses (POST /v1/responses with store: true, kept 30 days): the largest one kept, in
   * bytes of its conversation (a request whose input alone is larger is a 400), and how many one
   * account keeps (the oldest go first). They cost nothing but Redis memory, so they are bounded.
   */
  PROXY_RESPONSES_MAX_STORED_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
  PROXY_RESPONSES_MAX_STORED_PER_ACCOUNT: z.coerce.number().int().min(1).default(1_000),
  /**
   * Credit leases: each replica holds a slice of an account's credit (an ordinary hold, freed by the
   * sweeper if the replica dies) and carves request holds from it in memory, settling in batches, so
   * a request does no Redis round trip before its first byte. Near the limit the exact reserve-first
   * path runs instead. `false` reserves every request in Redis as before.
   */
  PROXY_LEASES: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
  /**
   * Most one replica leases of one account, in units of the account's currency (decimal string).
   * A lease is also never more than 1/8 of what the account has available.
   */
  PROXY_LEASE_MAX: z
    .string()
    .regex(/^\d{1,7}(\.\d{1,9})?$/, 'a decimal amount such as "10" or "2.5"')
    .default('10'),
  /** A lease unused for this long is given back to the account. */
  PROXY_LEASE_IDLE_MS: z.coerce.number().int().positive().default(1_000),
  /**
   * The proxy's data directory: its settlement journal (the outbox's append-only files, replayed at
   * start). One per replica, kept across restarts of that replica.
   */
  PROXY_DATA_DIR: z.string().min(1).default('.data/proxy'),
  /** When settlements have failed to reach Redis for this long, new billable calls are refused (500, retryable). */
  PROXY_OUTBOX_STALL_MS: z.coerce.number().int().min(100).default(5_000),
  /** Replicas WAIT must confirm before a settlement counts as done; 0 = the primary's reply is enough. */
  REDIS_WAIT_REPLICAS: z.coerce.number().int().min(0).max(16).default(0),
  /**
   * How long a request-path Redis command may take before the call gets a retryable 500
   * (Retry-After): a hung Redis (stopped, partitioned without a reset) must not hang calls.
   */
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(50).default(2_000),
  /**
   * How often a running stream's charge so far is written to the journal (0: never): a crash of
   * its replica loses at most this much of its delivered tokens.
   */
  PROXY_STREAM_PROGRESS_MS: z.coerce.number().int().min(0).default(1_000),
  /** How often a proxy replica publishes what its journal owes Redis (`ledger check` reads it). */
  PROXY_REPLICA_REPORT_MS: z.coerce.number().int().min(50).default(2_000),
  /**
   * How often a proxy replica publishes its per-model demand (in flight, queued, held for a cold
   * start) for the operator's scaler (core/demand.ts); the published hash lives three intervals.
   */
  PROXY_DEMAND_PUBLISH_MS: z.coerce.number().int().min(50).default(1_000),
  /** How long one WAIT may take before the settlement is retried. */
  REDIS_WAIT_TIMEOUT_MS: z.coerce.number().int().min(1).default(1_000),
  /** How long a near-limit call waits for other replicas to give back unused lease money. */
  PROXY_LEASE_RECLAIM_MS: z.coerce.number().int().min(0).default(250),
  /** On SIGTERM: how long running calls (long streams) may take to finish before they are ended. */
  PROXY_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** On shutdown: how long the outbox may take to land its settlements (the rest stays in the journal). */
  PROXY_SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).default(5_000),
  // The console (console/): its address, the base URL it shows as the API Endpoint, its sessions.
  CONSOLE_HOST: z.string().default('0.0.0.0'),
  CONSOLE_PORT: port(3000),
  CONSOLE_API_BASE_URL: z.string().url().default('http://localhost:8080/v1'),
  /**
   * A request to the console must arrive whole (headers and body) within this; its headers within
   * the smaller of this and 15 s. Every console request is small, so a slow or silent client is
   * cut off rather than left holding a socket.
   */
  CONSOLE_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(500).default(30_000),
  /** A session lasts this long from sign-in (revocable at any time: sign-out, or deleting it in Redis). */
  CONSOLE_SESSION_TTL_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .default(7 * 24 * 3_600_000),
  /**
   * `Secure` session cookies. Unset: on, unless CONSOLE_PUBLIC_URL is plain http on localhost
   * (`make dev`), where a browser would otherwise get no cookie it sends back (issue 24 item 8).
   */
  CONSOLE_SECURE_COOKIES: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1')),
  /** Failed sign-ins allowed per email, and per client address, in 15 minutes. */
  CONSOLE_SIGNIN_FAILURES_PER_EMAIL: z.coerce.number().int().min(1).default(5),
  CONSOLE_SIGNIN_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).default(30),
  // Security (issue 24): who may say where a request came from, and where metrics are served.
  /**
   * The load balancers in front of the console whose X-Forwarded-For is believed: their
   * addresses or CIDRs (`10.0.0.0/8,192.168.1.7`). Unset: none, so a client cannot choose the
   * address sign-in throttling counts against.
   */
  CONSOLE_TRUSTED_PROXIES: trustedProxies,
  /** The proxy's /metrics listens here, not on the API port (invite-only model names, revenue). */
  PROXY_METRICS_HOST: z.string().default('0.0.0.0'),
  PROXY_METRICS_PORT: port(9091),
  /** `production` makes a missing PROXY_PUBLIC_URL a start-up error (signed links need an origin). */
  NODE_ENV: z.string().default('development'),
  // Billing (console/routes/billing.ts, core/payments): top-ups and the service ledger API.
  /**
   * The console's address as browsers reach it: invitation links point here, and Stripe Checkout
   * sends the payer back to `<it>/billing`.
   */
  CONSOLE_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'an http(s) URL such as https://console.example.com' })
    .default('http://localhost:3000')
    .transform((u) => u.replace(/\/+$/, '')),
  /** How accounts top up: `approval` (an operator approves with the CLI), `stripe` (Checkout), or both. */
  CONSOLE_PAYMENT_PROVIDERS: z
    .string()
    .default('approval')
    .transform((s) => [
      ...new Set(
        s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    ])
    .pipe(z.array(z.enum(['stripe', 'approval'])).min(1, 'name at least one of stripe, approval')),
  /** Stripe's secret (or restricted) API key; required when the providers include stripe. */
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_\S+$/, 'a secret key (sk_...) or restricted key (rk_...), not a publishable pk_ key')
    .optional(),
  /** The signing secret of the webhook endpoint (`whsec_...`), which proves an event came from Stripe. */
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_\S+$/, 'the endpoint signing secret, whsec_...')
    .optional(),
  /** Another address for Stripe's API (stripe-mock in tests); unset: api.stripe.com. */
  STRIPE_API_URL: z
    .url({ protocol: /^https?$/, error: 'an http(s) URL such as http://127.0.0.1:12111' })
    .optional(),
  /**
   * Auto top-up (Stripe only): how often each console instance checks the balances of accounts
   * with it on (0: this instance does not check), and how many failed charges in a row pause it.
   */
  CONSOLE_AUTO_TOPUP_CHECK_MS: z.coerce.number().int().min(0).default(10_000),
  CONSOLE_AUTO_TOPUP_MAX_FAILURES: z.coerce.number().int().min(1).default(3),
  /** Smallest and largest top-up, in units of the account currency (decimal strings). */
  CONSOLE_TOPUP_MIN: z
    .string()
    .regex(/^\d{1,7}(\.\d{1,9})?$/, 'a decimal amount such as "5" or "2.5"')
    .default('5'),
  CONSOLE_TOPUP_MAX: z
    .string()
    .regex(/^\d{1,7}(\.\d{1,9})?$/, 'a decimal amount such as "10000"')
    .default('10000'),
  /**
   * The bearer token of the service ledger API (/ledger/v1), for the operator's other products that
   * spend the same credits. Unset: the API is off (404). At least 32 characters: openssl rand -hex 32.
   */
  CONSOLE_SERVICE_TOKEN: z
    .string()
    .min(32, 'at least 32 characters; generate with: openssl rand -hex 32')
    .regex(/^\S+$/, 'no spaces: it is sent as `Authorization: Bearer <token>`')
    .optional(),
  // Media (images, videos). Where the files live: MEDIA_STORE and friends (core/storage).
  /** Where generated media is kept: `fs` (MEDIA_DIR; one replica or a shared volume) or `s3`. */
  MEDIA_STORE: z.enum(['fs', 's3']).default('fs'),
  /** Where the filesystem media store keeps files (MEDIA_STORE=fs). */
  MEDIA_DIR: z.string().min(1).default('.data/media'),
  /** MEDIA_STORE=s3: the bucket (required), its region, and an S3-compatible endpoint (unset: AWS). */
  S3_BUCKET: z.string().min(3).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  // http(s) only: `minio:9000` parses as a URL with the scheme `minio:`, and the SDK then fails
  // far from here.
  S3_ENDPOINT: z.url({ protocol: /^https?$/, error: 'an http(s) URL such as http://minio:9000' }).optional(),
  /** Unset: true when S3_ENDPOINT is set (most S3-compatible servers want path-style URLs). */
  S3_FORCE_PATH_STYLE: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1')),
  /** Unset (both): the AWS SDK's default credential chain (environment, instance role, …). */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** A key prefix inside the bucket, so several installs can share one. */
  S3_PREFIX: z
    .string()
    .regex(/^([a-z0-9][a-z0-9._-]*\/)*$/, 'lowercase path segments, each ending in /')
    .default(''),
  /** The proxy's public origin for links to its own /files route; unset: the request's own host. */
  PROXY_PUBLIC_URL: z.string().url().optional(),
  /** How long an image's URL (and the image) lasts. */
  MEDIA_IMAGE_TTL_MS: z.coerce.number().int().min(1_000).default(3_600_000),
  /** How long a finished video's MP4 is kept after completion (SPEC: seven days). */
  VIDEO_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(7 * 24 * 3_600_000),
  /** How often a video job's engine is polled. */
  VIDEO_POLL_MS: z.coerce.number().int().min(10).default(2_000),
  /** A replica's claim on a job: another replica takes the job over this long after its poller died. */
  VIDEO_CLAIM_MS: z.coerce.number().int().min(100).default(30_000),
  /** How often the fleet's one media sweeper deletes files past their time. */
  MEDIA_SWEEP_INTERVAL_MS: z.coerce.number().int().min(10).default(60_000),
  /** Batches (docs/batches.md): the largest input file (OpenAI: 200 MB) and its most lines (50,000). */
  BATCH_FILE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .default(200 * 1024 * 1024),
  BATCH_MAX_LINES: z.coerce.number().int().min(1).default(50_000),
  /** false: this replica never runs batch lines (it still takes batches and answers for them). */
  BATCH_RUNNER: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /** Lines of one model a replica's batch runner runs at once, when the model is idle enough. */
  BATCH_CONCURRENCY: z.coerce.number().int().min(1).max(1_024).default(16),
  /** Interactive calls of a model in flight per endpoint, across the fleet, at or above which batch lines wait. */
  BATCH_IDLE_BELOW: z.coerce.number().int().min(1).default(4),
  /** How often the runner looks for work, and the leader lock's ttl (another replica takes over after it). */
  BATCH_POLL_MS: z.coerce.number().int().min(10).default(1_000),
  BATCH_LOCK_MS: z.coerce.number().int().min(100).default(15_000),
  /** The completion window (OpenAI and Anthropic: 24 h); shorter only in tests. */
  BATCH_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(24 * 3_600_000),
});

export type Config = Omit<z.infer<typeof schema>, 'CONSOLE_SECURE_COOKIES'> & {
  kek: Buffer;
  CONSOLE_SECURE_COOKIES: boolean;
};

/** Plain http on a loopback name: the one place a session cookie need not be Secure. */
export const isLocalHttp = (url: string) =>
  /^http:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.test(url.replace(/\/+$/, ''));

const checked = schema.superRefine((c, ctx) => {
  if (c.MEDIA_STORE === 's3' && c.S3_BUCKET === undefined)
    ctx.addIssue({ code: 'custom', path: ['S3_BUCKET'], message: 'required when MEDIA_STORE=s3' });
  if ((c.S3_ACCESS_KEY_ID === undefined) !== (c.S3_SECRET_ACCESS_KEY === undefined))
    ctx.addIssue({ code: 'custom', path: ['S3_SECRET_ACCESS_KEY'], message: 'set both S3 keys, or neither' });
  if (c.CONSOLE_PAYMENT_PROVIDERS.includes('stripe')) {
    for (const name of ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET'] as const)
      if (c[name] === undefined)
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'required when CONSOLE_PAYMENT_PROVIDERS includes stripe',
        });
  }
  if (parseDecimalToNano(c.CONSOLE_TOPUP_MIN) > parseDecimalToNano(c.CONSOLE_TOPUP_MAX))
    ctx.addIssue({
      code: 'custom',
      path: ['CONSOLE_TOPUP_MAX'],
      message: 'must not be below CONSOLE_TOPUP_MIN',
    });
});

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = checked.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`invalid configuration:\n${problems}`);
  }
  return {
    ...parsed.data,
    CONSOLE_SECURE_COOKIES:
      parsed.data.CONSOLE_SECURE_COOKIES ?? !isLocalHttp(parsed.data.CONSOLE_PUBLIC_URL),
    kek: Buffer.from(parsed.data.MODELPLANE_KEK, 'hex'),
  };
}

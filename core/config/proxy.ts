// The proxy's settings (proxy/): its listeners, engines, routing (./routing.ts), tracing, money on
// the request path (leases, the journal's outbox), stored responses, video polling and batches.
// Listed in docs/operations.md "Configuration".
import { z } from 'zod';
import { routingConfig } from './routing.ts';
import { csv, port } from './values.ts';

export const proxyConfig = {
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
  /**
   * How long the start-up keeps retrying its first Redis steps (its policy check, the catalogue)
   * while Redis is out of reach or slower than REDIS_COMMAND_TIMEOUT_MS, before the process exits.
   */
  PROXY_STARTUP_REDIS_RETRY_MS: z.coerce.number().int().min(0).default(60_000),
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
  /**
   * How often a running stream's charge so far is written to the journal (0: never): a crash of
   * its replica loses at most this much of its delivered tokens.
   */
  PROXY_STREAM_PROGRESS_MS: z.coerce.number().int().min(0).default(1_000),
  /** How often a proxy replica publishes what its journal owes Redis (`ledger check` reads it). */
  PROXY_REPLICA_REPORT_MS: z.coerce.number().int().min(50).default(2_000),
  /**
   * How often a proxy replica publishes its per-model demand (in flight, queued, held for a cold
   * start) for the operator's scaler (core/demand/demand.ts); the published hash lives three intervals.
   */
  PROXY_DEMAND_PUBLISH_MS: z.coerce.number().int().min(50).default(1_000),
  /** How long a near-limit call waits for other replicas to give back unused lease money. */
  PROXY_LEASE_RECLAIM_MS: z.coerce.number().int().min(0).default(250),
  /** On SIGTERM: how long running calls (long streams) may take to finish before they are ended. */
  PROXY_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** On shutdown: how long the outbox may take to land its settlements (the rest stays in the journal). */
  PROXY_SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).default(5_000),
  /** The proxy's /metrics listens here, not on the API port (invite-only model names, revenue). */
  PROXY_METRICS_HOST: z.string().default('0.0.0.0'),
  PROXY_METRICS_PORT: port(9091),
  /** How often a video job's engine is polled. */
  VIDEO_POLL_MS: z.coerce.number().int().min(10).default(2_000),
  /** A replica's claim on a job: another replica takes the job over this long after its poller died. */
  VIDEO_CLAIM_MS: z.coerce.number().int().min(100).default(30_000),
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
};

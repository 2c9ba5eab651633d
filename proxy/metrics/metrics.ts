// Prometheus metrics (served at /metrics on their own port: ./metrics-server.ts). A registry per app (not prom-client's global one) so tests can
// build many apps in one process. Requests are counted when the response ends, from the route
// pattern (never the raw URL: model ids in paths would explode label cardinality). The metrics
// updated on every request are ./fast-metrics.ts ones (an update is an addition); rare ones are
// prom-client's own.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { FastCounter, FastGauge, FastHistogram } from './fast-metrics.ts';

const latencyBuckets = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];
const overheadBuckets = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];

export function createProxyMetrics() {
  const registry = new Registry();
  /** Where the outbox gauge reads from at scrape time (Billing sets it; the fault gauges are proxy/faults/). */
  const sources = {
    outboxPending: () => 0,
    /** Settlements not acknowledged by Redis, and of them those whose journal line is not written. */
    owed: () => ({ settlements: 0, unwritten: 0 }),
    /** Video jobs not finished yet, and the age of the oldest (s); the video worker sets them. */
    videoQueue: async (): Promise<{ depth: number; oldestAgeS: number }> => ({ depth: 0, oldestAgeS: 0 }),
  };
  const r = [registry];
  const m = {
    registry,
    requests: new FastCounter({
      name: 'mp_proxy_requests_total',
      help: 'Requests by route, model and status',
      labelNames: ['route', 'model', 'status'] as const,
      registers: r,
    }),
    ttfb: new FastHistogram({
      name: 'mp_proxy_time_to_first_byte_seconds',
      help: 'Request start to first response byte (first stream frame for streams)',
      labelNames: ['route', 'model'] as const,
      buckets: latencyBuckets,
      registers: r,
    }),
    duration: new FastHistogram({
      name: 'mp_proxy_request_duration_seconds',
      help: 'Request start to the end of the response',
      labelNames: ['route', 'model'] as const,
      buckets: latencyBuckets,
      registers: r,
    }),
    overhead: new FastHistogram({
      name: 'mp_proxy_added_latency_seconds',
      help: "Time to first byte minus the engine's own time to first byte: what the proxy adds",
      labelNames: ['route'] as const,
      buckets: overheadBuckets,
      registers: r,
    }),
    tokens: new FastCounter({
      name: 'mp_proxy_tokens_total',
      help: 'Tokens billed, by model and type (input, cached, output)',
      labelNames: ['model', 'type'] as const,
      registers: r,
    }),
    credits: new FastCounter({
      name: 'mp_proxy_credits_charged_nano_total',
      help: 'Credits charged, in nano-units of the currency',
      labelNames: ['model', 'currency'] as const,
      registers: r,
    }),
    refunded: new Counter({
      name: 'mp_proxy_credits_refunded_nano_total',
      help: 'Credits given back (a video job that failed after its charge), in nano-units of the currency',
      labelNames: ['model', 'currency'] as const,
      registers: r,
    }),
    inFlight: new FastGauge({
      name: 'mp_proxy_in_flight_requests',
      help: 'Requests being served by this replica',
      labelNames: ['route'] as const,
      registers: r,
    }),
    engineErrors: new Counter({
      name: 'mp_proxy_engine_errors_total',
      help: 'Engine failures by model and kind (connect, status, stream, timeout)',
      labelNames: ['model', 'kind'] as const,
      registers: r,
    }),
    holdsVoided: new Counter({
      name: 'mp_proxy_holds_voided_total',
      help: 'Holds and leases voided because their owner stopped renewing them (crashed, or cut off from Redis), by reason',
      labelNames: ['reason'] as const,
      registers: r,
    }),
    uncollected: new Counter({
      name: 'mp_proxy_credits_uncollected_nano_total',
      help: 'Cost of delivered calls that could not be charged (the hold was short or voided and the balance ran out), in nano-units',
      labelNames: ['model', 'currency'] as const,
      registers: r,
    }),
    billingRefused: new Counter({
      name: 'mp_proxy_billing_refused_total',
      help: 'Billable calls refused because settlements were not reaching Redis (the outbox stalled)',
      registers: r,
    }),
    outboxPending: new Gauge({
      name: 'mp_proxy_outbox_pending',
      help: 'Settlements sent to Redis and not acknowledged yet',
      registers: r,
      collect() {
        this.set(sources.outboxPending());
      },
    }),
    settlementsOwed: new Gauge({
      name: 'mp_proxy_settlements_owed',
      help: 'Settlements of delivered calls Redis has not acknowledged yet (the replica report has their amounts per account)',
      registers: r,
      collect() {
        this.set(sources.owed().settlements);
      },
    }),
    settlementsUnwritten: new Gauge({
      name: 'mp_proxy_settlements_unwritten',
      help: 'Of those, settlements whose journal line the disk has not taken (a full PROXY_DATA_DIR): owed from memory alone, their calls wait for Redis to acknowledge them',
      registers: r,
      collect() {
        this.set(sources.owed().unwritten);
      },
    }),
    streamsStalled: new Counter({
      name: 'mp_proxy_streams_stalled_total',
      help: 'Streams ended because their client stopped reading for PROXY_STREAM_STALL_MS (billed for what was generated)',
      registers: r,
    }),
    responsesStalled: new Counter({
      name: 'mp_proxy_responses_stalled_total',
      help: 'Large replies and file downloads ended because their client stopped reading for PROXY_STREAM_STALL_MS',
      registers: r,
    }),
    images: new Counter({
      name: 'mp_proxy_images_total',
      help: 'Images generated and delivered (generations and edits), by model',
      labelNames: ['model'] as const,
      registers: r,
    }),
    videoSeconds: new Counter({
      name: 'mp_proxy_video_seconds_total',
      help: 'Seconds of video charged at job creation, by model',
      labelNames: ['model'] as const,
      registers: r,
    }),
    videoJobs: new Counter({
      name: 'mp_proxy_video_jobs_finished_total',
      help: 'Video jobs this replica saw finish, by model and status (completed, failed)',
      labelNames: ['model', 'status'] as const,
      registers: r,
    }),
    videoJobSeconds: new Histogram({
      name: 'mp_proxy_video_job_duration_seconds',
      help: 'From creation to completed or failed, by model',
      labelNames: ['model'] as const,
      buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600],
      registers: r,
    }),
    videoQueueDepth: new Gauge({
      name: 'mp_proxy_video_queue_depth',
      help: 'Video jobs queued or in progress (fleet-wide)',
      registers: r,
      async collect() {
        this.set((await sources.videoQueue()).depth);
      },
    }),
    videoOldestJobAge: new Gauge({
      name: 'mp_proxy_video_oldest_job_age_seconds',
      help: 'Age of the oldest unfinished video job (fleet-wide; 0 when none)',
      registers: r,
      async collect() {
        this.set((await sources.videoQueue()).oldestAgeS);
      },
    }),
  };
  // Per-request counters of the billing path (model, type / model, currency).
  return {
    ...m,
    sources,
    tokensOf: m.tokens.labels.bind(m.tokens),
    creditsOf: m.credits.labels.bind(m.credits),
    refundedOf: m.refunded.labels.bind(m.refunded),
  };
}

export type ProxyMetrics = ReturnType<typeof createProxyMetrics>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Canonical model id once resolved, for metric labels. */
    metricModel: string;
    /** Set by streaming routes, which observe time to first frame themselves. */
    observedTtfb: boolean;
  }
}

const routeOf = (request: FastifyRequest) => request.routeOptions.url ?? 'unmatched';

export const metricsPlugin = fp(
  async (app: FastifyInstance, opts: { metrics: ProxyMetrics }) => {
    const m = opts.metrics;
    // Label order is each metric's labelNames order.
    app.decorateRequest('metricModel', '');
    app.decorateRequest('observedTtfb', false);
    app.addHook('onRequest', (request, reply, done) => {
      const route = routeOf(request);
      m.inFlight.labels(route).inc();
      // 'close' follows every response, finished or cut by the client (onResponse misses the
      // latter), and fires once.
      reply.raw.once('close', () => finish(request, reply, route));
      done();
    });
    const finish = (request: FastifyRequest, reply: FastifyReply, route: string) => {
      const seconds = reply.elapsedTime / 1000;
      const status = reply.raw.writableFinished ? String(reply.raw.statusCode) : '499';
      const model = request.metricModel;
      m.inFlight.labels(route).dec();
      m.requests.labels(route, model, status).inc();
      m.duration.labels(route, model).observe(seconds);
      if (!request.observedTtfb) m.ttfb.labels(route, model).observe(seconds);
    };
    // Served on PROXY_METRICS_PORT, not here (./metrics-server.ts, issue 24 item 6).
  },
  { name: 'metrics' },
);

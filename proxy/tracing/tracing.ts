// Tracing with OpenTelemetry (docs/operations.md "Configuration", docs/install.md "Turning tracing on").
// Off unless OTEL_EXPORTER_OTLP_ENDPOINT names an OTLP/HTTP collector: then buildProxyApp makes one
// Tracing and registers ./plugin.ts, and each sampled /v1 request carries a RequestTrace
// (request.trace).
// Off, nothing here runs: no hook, no span object; the call sites test `request.trace` only.
//
// One trace per request: the server span (the request), and under it auth → model resolution →
// credit hold → engine call (whose W3C traceparent the engine receives) → settlement. The spans are
// parented explicitly through the RequestTrace, not through a global context manager: nothing is
// registered globally, so two apps in one process (the tests) keep their traces apart, and no
// AsyncLocalStorage runs on the hot path.
//
// What a span may hold: ids, the model, counts, status. Never a prompt, a completion, a header or a
// key; the GenAI semantic conventions' content attributes are deliberately not set.
// The inbound `traceparent` of a client is ignored: the API is public, and a caller must not decide
// what this proxy samples (nor join its spans to a trace of theirs).
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { UsageRecord } from '../../core/billing/index.ts';
import type { ProxyConfig as Config } from '../../core/config/index.ts';
import type { CallUsage } from '../usage.ts';

// GenAI semantic conventions (still "development" there, so copied rather than imported from the
// package's incubating entry point, as its README advises).
const GEN_AI_OPERATION = 'gen_ai.operation.name';
const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
const GEN_AI_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
const GEN_AI_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
const GEN_AI_CACHE_READ_TOKENS = 'gen_ai.usage.cache_read.input_tokens';

/** gen_ai.operation.name for a call's kind (the convention's well-known values). */
const operations: Record<UsageRecord['kind'], string> = {
  chat: 'chat',
  embedding: 'embeddings',
  image: 'generate_content',
  video: 'generate_content',
  service: 'generate_content',
};

const propagator = new W3CTraceContextPropagator();
const headerSetter = {
  set(carrier: Record<string, string>, key: string, value: string) {
    carrier[key] = value;
  },
};

export class Tracing {
  private constructor(
    private readonly provider: BasicTracerProvider,
    private readonly tracer: Tracer,
  ) {}

  /** null when no OTLP endpoint is configured: tracing is off. */
  static fromConfig(config: Config): Tracing | null {
    const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
    if (endpoint === undefined) return null;
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.OTEL_SERVICE_NAME }),
      // The request's span decides by ratio; its children follow it.
      sampler: new ParentBasedSampler({
        root: new TraceIdRatioBasedSampler(config.PROXY_TRACE_SAMPLE_RATIO),
      }),
      spanProcessors: [
        new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/traces` })),
      ],
    });
    return new Tracing(provider, provider.getTracer('modelplane-proxy'));
  }

  /**
   * The server span of one API request, or undefined when the sampler leaves it out: an unsampled
   * request then costs the sampler's decision and nothing more (no child spans, no traceparent
   * sent; the engine's own tracing decides for itself).
   */
  begin(method: string, route: string, requestId: string): RequestTrace | undefined {
    const root = this.tracer.startSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': method,
          'http.route': route,
          'modelplane.request_id': requestId,
        },
      },
      ROOT_CONTEXT,
    );
    return root.isRecording() ? new RequestTrace(this.tracer, root) : undefined;
  }

  /** Sends what is buffered (shutdown, tests). */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

export class RequestTrace {
  private readonly context: Context;

  constructor(
    private readonly tracer: Tracer,
    readonly root: Span,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, root);
  }

  get traceId(): string {
    return this.root.spanContext().traceId;
  }

  /** A child of the request's span. */
  start(name: string, attributes?: Attributes, kind: SpanKind = SpanKind.INTERNAL): Span {
    return this.tracer.startSpan(name, { kind, attributes }, this.context);
  }

  /** The call is metered: what it is, on the request's span. */
  call(kind: UsageRecord['kind'], model: string): void {
    this.root.setAttributes({ [GEN_AI_OPERATION]: operations[kind], [GEN_AI_REQUEST_MODEL]: model });
  }

  /**
   * One attempt at an engine (`url`, its base URL: an address inside the cluster, no secret): a
   * client span, and the headers that carry it to the engine.
   */
  engine(
    kind: UsageRecord['kind'],
    model: string,
    url: string,
  ): { span: Span; headers: Record<string, string> } {
    const operation = operations[kind];
    const span = this.start(
      `${operation} ${model}`,
      { [GEN_AI_OPERATION]: operation, [GEN_AI_REQUEST_MODEL]: model, 'url.full': url },
      SpanKind.CLIENT,
    );
    const headers: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, headerSetter);
    return { span, headers };
  }

  /** The settlement of `counts`: its span (ended once journaled); the usage goes on the request's span. */
  settlement(counts: CallUsage): Span {
    // Counts a modality has none of (an image's tokens) stay unset.
    const usage: Attributes = {};
    if (counts.inputTokens !== undefined) usage[GEN_AI_INPUT_TOKENS] = counts.inputTokens;
    if (counts.outputTokens !== undefined) usage[GEN_AI_OUTPUT_TOKENS] = counts.outputTokens;
    if (counts.cachedTokens !== undefined) usage[GEN_AI_CACHE_READ_TOKENS] = counts.cachedTokens;
    this.root.setAttributes(usage);
    return this.start('settlement', usage);
  }

  /** The response is out (or the connection closed): the request's span ends. */
  end(statusCode: number): void {
    this.root.setAttribute('http.response.status_code', statusCode);
    if (statusCode >= 500) this.root.setStatus({ code: SpanStatusCode.ERROR });
    this.root.end();
  }
}

/** Marks a span failed with the error's class only: an error's message may quote the request. */
export function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', err instanceof Error ? err.constructor.name : typeof err);
}

/** Ends `span` when `work` does, marked failed if it throws; resolves or rejects as `work` does. */
export async function spanOver<T>(span: Span, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    failed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

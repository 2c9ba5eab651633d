// Per-request loggers made on first use. fastify gives every request a pino child bound to its
// request id; pino serializes a child's bindings when it is made, about 1 % of the proxy's CPU on
// the hot route, although at the usual levels (info for a service, warn in benchmarks) most
// requests never write a line at a level that is enabled. The child is created the first time the
// request logs at an enabled level, so what is written is exactly what the eager child writes.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';
import { redactQuery } from '../http/redact-url.ts';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

// Methods on the prototype, not closures per instance: one small object per request is the point.
class LazyChild {
  private made: Logger | null = null;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}

  private logger(): Logger {
    this.made ??= this.parent.child(this.bindings, this.opts);
    return this.made;
  }

  /** Who knows the level: the child once made, or when a per-route level (opts.level) applies. */
  private decider(): Logger {
    return this.made ?? (this.opts.level !== undefined ? this.logger() : this.parent);
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.decider().isLevelEnabled(level)) return;
    (this.logger()[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  get level(): string {
    return this.decider().level;
  }

  set level(level: string) {
    this.logger().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return this.decider().isLevelEnabled(level);
  }

  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, opts);
  }
}

/** fastify's `childLoggerFactory`: the request's child logger, made when it first writes. */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  opts: ChildLoggerOptions,
): FastifyBaseLogger {
  // fastify's null logger (logger: false) is not pino and has no levels to ask: its children are
  // free, so it keeps its own.
  if (typeof (logger as Partial<Logger>).isLevelEnabled !== 'function') return logger.child(bindings, opts);
  return new LazyChild(logger as Logger, bindings, opts) as unknown as FastifyBaseLogger;
}

/** How a request is logged (pino `req` serializer): method, path with its query redacted, host. */
export function requestForLog(req: FastifyRequest): {
  method: string;
  url: string;
  version?: string;
  host: string;
  remoteAddress: string;
  remotePort?: number;
} {
  return { method: req.method, url: redactQuery(req.url), host: req.hostname, remoteAddress: req.ip };
}

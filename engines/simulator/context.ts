// What every route handler gets: the live options and the simulator's shared state.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FileStore } from './file-store.ts';
import type { Metrics } from './metrics.ts';
import type { SimulatorOptions } from './options.ts';
import type { PrefixCache } from './prefix-cache.ts';
import type { Scheduler } from './scheduler.ts';
import type { VideoJobs } from './videos/jobs.ts';

export const SYSTEM_FINGERPRINT = 'modelplane-simulator (not a real model)';

/** What a multipart request carried, for tests: its text fields, and its files by size. */
export interface ReceivedForm {
  fields: Record<string, string>;
  files: { name: string; filename: string | null; contentType: string | null; bytes: number }[];
}

export interface SimContext {
  options: SimulatorOptions;
  scheduler: Scheduler;
  metrics: Metrics;
  prefixCache: PrefixCache;
  files: FileStore;
  videos: VideoJobs;
  /** LoRA adapters loaded at runtime (/v1/load_lora_adapter): name → the path it was loaded from. */
  adapters: Map<string, string>;
  /** Adds what a handler parsed of a multipart body to the request's entry in `received()`. */
  noteForm(req: IncomingMessage, form: ReceivedForm): void;
}

export type RouteHandler = (
  ctx: SimContext,
  req: IncomingMessage,
  res: ServerResponse,
  params: Record<string, string>,
  /** The whole request body, already read within maxBodyBytes (empty for GET). */
  body: Buffer,
) => Promise<void>;

/** The base URL clients used to reach us (for file links), from the Host header. */
export function publicBaseUrl(req: IncomingMessage): string {
  return `http://${req.headers.host ?? 'localhost'}`;
}

/** An AbortSignal that fires when the client goes away before the response is complete. */
export function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}

/** Per-request latency override from a header (ms), else the configured value. */
export function latencyHeader(req: IncomingMessage, name: string, fallback: number): number {
  const raw = req.headers[name];
  const v = Number(Array.isArray(raw) ? raw[0] : raw);
  return raw !== undefined && Number.isFinite(v) && v >= 0 ? v : fallback;
}

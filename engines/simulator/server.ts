// The inference simulator: an OpenAI-compatible, vLLM-like engine on bare node:http, standing in for
// GPUs in dev, tests and benchmarks. Its own overhead is small and predictable on purpose — the
// proxy benchmark compares against it.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleLoadLora, handleUnloadLora } from './adapters.ts';
import { handleChat } from './chat/handler.ts';
import { handleTokenize } from './chat/tokenize.ts';
import type { ReceivedForm, RouteHandler, SimContext } from './context.ts';
import { handleEmbeddings } from './embeddings.ts';
import { FileStore } from './file-store.ts';
import { HttpError, readBody, sendError, sendJson } from './http.ts';
import { handleFile, handleImageEdits, handleImageGenerations } from './images.ts';
import { KvEventPublisher } from './kv-events.ts';
import { Metrics, type SimulatorStats } from './metrics.ts';
import { resolveOptions, type SimulatorOptions, validateOptions } from './options.ts';
import { PrefixCache } from './prefix-cache.ts';
import { Scheduler } from './scheduler.ts';
import {
  handleCreateVideo,
  handleDeleteVideo,
  handleGetVideo,
  handleListVideos,
  handleVideoContent,
} from './videos/handler.ts';
import { VideoJobs } from './videos/jobs.ts';

export type { SimulatorStats } from './metrics.ts';
export type { SimulatorOptions } from './options.ts';

/** A request as the simulator received it, for tests that assert what a proxy sent upstream. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body, when the body was JSON. */
  json: unknown;
  /** A multipart body's fields and files (image edits, image-to-video), as the handler read it. */
  form?: ReceivedForm;
}

export interface Simulator {
  url: string;
  port: number;
  close(): Promise<void>;
  /**
   * What vLLM does on SIGTERM with --shutdown-timeout: stop listening, answer new requests 503,
   * let the in-flight ones finish for up to `timeoutMs`, then close whatever is left.
   */
  shutdown(timeoutMs: number): Promise<void>;
  /** Requests being answered now (streams count until their last byte). */
  inFlight(): number;
  setOptions(partial: Partial<SimulatorOptions>): void;
  stats(): SimulatorStats;
  /** The most recent requests (up to 200), oldest first. */
  received(): ReceivedRequest[];
  /** Every video job it holds, oldest first: how often each was created (replays) and polled, by whom. */
  videoJobs(): SimVideoJob[];
  /** LoRA adapters loaded at runtime, name → path, in load order. */
  adapters(): Map<string, string>;
  /** The KV-event publisher (--kv-events-endpoint), null when off: its bound url and replay url. */
  kvEvents: KvEventPublisher | null;
}

export interface SimVideoJob {
  id: string;
  prompt: string;
  idempotencyKey: string | null;
  creates: number;
  polls: { atMs: number; by: string }[];
}

const RECEIVED_LIMIT = 200;

/** The routes vLLM itself serves: their errors take vLLM's shape (http.ts errorBody). */
const VLLM_ROUTES = /^\/(v1\/chat\/completions|v1\/embeddings|tokenize|v1\/(un)?load_lora_adapter)$/;

// vLLM's fields (root: the weights it loaded; one permission entry), owned by the simulator.
const modelEntry = (ctx: SimContext, id: string) => ({
  id,
  object: 'model',
  created: 0,
  owned_by: 'modelplane-simulator',
  root: id,
  parent: null,
  max_model_len: ctx.options.maxModelLen,
  permission: [
    {
      id: `modelperm-${id}`,
      object: 'model_permission',
      created: 0,
      allow_create_engine: false,
      allow_sampling: true,
      allow_logprobs: true,
      allow_search_indices: false,
      allow_view: true,
      allow_fine_tuning: false,
      organization: '*',
      group: null,
      is_blocking: false,
    },
  ],
});

// A loaded adapter is listed as vLLM lists one: root its path, parent the base (the first model).
const adapterEntry = (ctx: SimContext, name: string, path: string) => ({
  ...modelEntry(ctx, name),
  root: path,
  parent: ctx.options.models[0] ?? null,
});

const handleModels: RouteHandler = async (ctx, _req, res) => {
  const adapters = [...ctx.adapters].map(([name, path]) => adapterEntry(ctx, name, path));
  sendJson(res, 200, {
    object: 'list',
    data: [...ctx.options.models.map((id) => modelEntry(ctx, id)), ...adapters],
  });
};

// Any id is served (the simulator accepts every model); ids may contain '/'.
const handleModel: RouteHandler = async (ctx, _req, res, params) => {
  const raw = params.id ?? '';
  let id = raw;
  try {
    id = decodeURIComponent(raw);
  } catch {
    // not percent-encoded after all: serve the id as written
  }
  sendJson(res, 200, modelEntry(ctx, id));
};

const routes: Array<{ method: string; path: RegExp; handler: RouteHandler }> = [
  { method: 'POST', path: /^\/v1\/chat\/completions$/, handler: handleChat },
  { method: 'POST', path: /^\/v1\/embeddings$/, handler: handleEmbeddings },
  { method: 'POST', path: /^\/tokenize$/, handler: handleTokenize },
  { method: 'POST', path: /^\/v1\/images\/generations$/, handler: handleImageGenerations },
  { method: 'POST', path: /^\/v1\/images\/edits$/, handler: handleImageEdits },
  { method: 'POST', path: /^\/v1\/videos$/, handler: handleCreateVideo },
  { method: 'GET', path: /^\/v1\/videos$/, handler: handleListVideos },
  { method: 'GET', path: /^\/v1\/videos\/(?<id>[^/]+)$/, handler: handleGetVideo },
  { method: 'DELETE', path: /^\/v1\/videos\/(?<id>[^/]+)$/, handler: handleDeleteVideo },
  { method: 'GET', path: /^\/v1\/videos\/(?<id>[^/]+)\/content$/, handler: handleVideoContent },
  { method: 'GET', path: /^\/v1\/models$/, handler: handleModels },
  { method: 'GET', path: /^\/v1\/models\/(?<id>.+)$/, handler: handleModel },
  { method: 'POST', path: /^\/v1\/load_lora_adapter$/, handler: handleLoadLora },
  { method: 'POST', path: /^\/v1\/unload_lora_adapter$/, handler: handleUnloadLora },
  { method: 'GET', path: /^\/files\/(?<name>[0-9a-f]+\.[a-z0-9]+)$/, handler: handleFile },
  {
    // vLLM's (dev mode): empties the prefix cache, published as AllBlocksCleared.
    method: 'POST',
    path: /^\/reset_prefix_cache$/,
    handler: async (ctx, _req, res) => {
      ctx.prefixCache.reset();
      res.writeHead(200).end();
    },
  },
  {
    method: 'GET',
    path: /^\/health$/,
    handler: async (_ctx, _req, res) => sendJson(res, 200, { status: 'ok' }),
  },
  {
    method: 'GET',
    path: /^\/metrics$/,
    handler: async (ctx, _req, res) => {
      const text = ctx.metrics.render();
      res.writeHead(200, {
        'content-type': 'text/plain; version=0.0.4; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    },
  },
];

export async function startSimulator(
  opts: Partial<SimulatorOptions> & { port?: number; host?: string } = {},
): Promise<Simulator> {
  const { port = 0, host = '127.0.0.1', ...rest } = opts;
  const options = resolveOptions(rest);
  const scheduler = new Scheduler(() => options.maxConcurrency);
  const kvEvents =
    options.kvEventsEndpoint === null
      ? null
      : await KvEventPublisher.start({
          endpoint: options.kvEventsEndpoint,
          replayEndpoint: options.kvEventsReplayEndpoint,
          bufferSteps: 10_000,
        });
  const ctx: SimContext = {
    options,
    scheduler,
    metrics: new Metrics(scheduler, () => options),
    prefixCache: new PrefixCache(
      () => ({
        blockSize: options.prefixBlockSize,
        capacityBlocks: options.prefixCacheBlocks,
      }),
      // The topic names the model, as llm-d's kv@<pod>@<model> does: one engine may serve several.
      (model, events) => kvEvents?.publish(`kv@${model}`, events),
    ),
    files: new FileStore(),
    videos: new VideoJobs(),
    adapters: new Map(),
    noteForm: (req, form) => {
      const entry = entries.get(req);
      if (entry !== undefined) entry.form = form;
    },
  };
  const received: ReceivedRequest[] = [];
  const entries = new WeakMap<IncomingMessage, ReceivedRequest>();

  const dispatch = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    const matching = routes.filter((r) => r.path.test(path));
    const route = matching.find((r) => r.method === method);
    if (!route) {
      if (matching.length > 0)
        throw new HttpError(405, `method ${method} not allowed on ${path}`, null, 'method_not_allowed');
      throw new HttpError(404, `no route for ${method} ${path}`, null, 'not_found');
    }
    if (path.startsWith('/v1/')) ctx.metrics.requests++;
    const body = method === 'POST' ? await readBody(req, options.maxBodyBytes) : Buffer.alloc(0);
    const entry: ReceivedRequest = { method, path, headers: req.headers, json: tryJson(req, body) };
    received.push(entry);
    entries.set(req, entry);
    if (received.length > RECEIVED_LIMIT) received.shift();
    const params = { ...route.path.exec(path)?.groups };
    await route.handler(ctx, req, res, params, body);
  };

  let draining = false;
  let inFlight = 0;
  const settled = new Set<() => void>();
  const server = createServer((req, res) => {
    if (draining) {
      // vLLM's answer while it drains: a 5xx before any byte, which the proxy fails over.
      res.setHeader('connection', 'close');
      sendError(
        res,
        new HttpError(503, 'the engine is shutting down', null, 'service_unavailable'),
        'openai',
      );
      return;
    }
    inFlight++;
    res.once('close', () => {
      inFlight--;
      if (inFlight === 0) for (const done of settled) done();
    });
    dispatch(req, res).catch((err: unknown) => {
      const httpError =
        err instanceof HttpError
          ? err
          : new HttpError(
              500,
              `simulator error: ${err instanceof Error ? err.message : String(err)}`,
              null,
              'server_error',
            );
      sendError(res, httpError, VLLM_ROUTES.test((req.url ?? '/').split('?')[0]!) ? 'vllm' : 'openai');
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const close = async () => {
    await new Promise<void>((resolve, reject) => {
      server.close((err) => (err && !draining ? reject(err) : resolve()));
      server.closeAllConnections();
    });
    await kvEvents?.close();
  };
  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    close,
    async shutdown(timeoutMs) {
      draining = true;
      server.close();
      server.closeIdleConnections();
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, timeoutMs);
          function done() {
            clearTimeout(timer);
            settled.delete(done);
            resolve();
          }
          settled.add(done);
        });
      }
      await close();
    },
    inFlight: () => inFlight,
    kvEvents,
    adapters: () => new Map(ctx.adapters),
    setOptions(partial) {
      const next = { ...options, ...partial };
      validateOptions(next);
      Object.assign(options, next);
      scheduler.drain();
    },
    stats: () => ctx.metrics.stats(),
    received: () => [...received],
    videoJobs: () =>
      ctx.videos.all().map((j) => ({
        id: j.id,
        prompt: j.prompt,
        idempotencyKey: j.idempotencyKey ?? null,
        creates: j.creates,
        polls: [...j.polls],
      })),
  };
}

function tryJson(req: IncomingMessage, body: Buffer): unknown {
  if (body.length === 0 || !/json/i.test(req.headers['content-type'] ?? '')) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

// An embeddings call (EMB-1, EMB-2) through the one metered lifecycle (./metered.ts), billed per
// input token from the engine's usage. The engine is always asked for floats and the proxy
// encodes base64 itself (little-endian float32), so the encoding is exactly the spec's whatever
// the engine supports.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry, TokenPrice } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import { callCost } from '../billing/call-cost.ts';
import { textBill } from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { callEngine, type EngineCall, engineClientError } from '../engine/call.ts';
import { usageFromEngine } from '../engine/frames/index.ts';
import type { EmbeddingsRequest } from '../schemas/embeddings.ts';
import type { TextUsage } from '../usage.ts';
import { meteredCall, type Quote } from './metered.ts';

export function embeddingsCall(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  e: { entry: CatalogueEntry; price: TokenPrice; body: EmbeddingsRequest; inputs: number; quote: Quote },
): Promise<FastifyReply> {
  const { entry, price, body, inputs, quote } = e;
  const payload = JSON.stringify({ ...body, model: entry.servedName ?? entry.id, encoding_format: 'float' });
  return meteredCall(ctx, request, reply, {
    kind: 'embedding',
    model: entry.id,
    quote,
    run: async (_out, cancel) => {
      const tried = new Set<string>();
      const call = await callEngine(ctx.engine, {
        entry,
        path: '/v1/embeddings',
        payload,
        cancel,
        tried,
        trace: request.trace,
        account: request.principal.accountId,
        bytes: payload.length,
      });
      if (call.statusCode >= 400) {
        call.release();
        throw await engineClientError(call, entry.id);
      }
      return readEmbeddings(call);
    },
    bill: (result) => {
      result.json.model = entry.id;
      if (body.encoding_format === 'base64') encodeBase64(result.json);
      const perInput = entry.contextLength;
      const bill = textBill(price, result.usage, { output: 0, input: perInput && perInput * inputs });
      // usage.cost and usage.currency: what this bill settles (../billing/call-cost.ts).
      result.json.usage = { ...(result.json.usage as object), ...callCost(request, bill.cost) };
      return { cost: bill.cost, counts: bill.usage, deliver: () => reply.send(result.json) };
    },
  });
}

async function readEmbeddings(
  call: EngineCall,
): Promise<{ json: Record<string, unknown>; usage: TextUsage }> {
  try {
    const json = JSON.parse(await call.body.text()) as Record<string, unknown>;
    const usage = usageFromEngine(json.usage);
    if (!Array.isArray(json.data) || usage === null) throw new Error('engine response lacks data or usage');
    // Embeddings have no output tokens and no prompt cache pricing.
    return { json, usage: { inputTokens: usage.inputTokens, cachedTokens: 0, outputTokens: 0 } };
  } catch (err) {
    throw new ApiError('server_error', 'The engine sent an unreadable response.', { cause: err });
  } finally {
    call.release();
  }
}

/** EMB-2: each vector as the base64 of its little-endian float32 bytes. */
export function floatsToBase64(v: readonly number[]): string {
  const buf = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i]!, i * 4);
  return buf.toString('base64');
}

function encodeBase64(json: Record<string, unknown>): void {
  for (const item of json.data as { embedding?: unknown }[]) {
    if (Array.isArray(item.embedding)) item.embedding = floatsToBase64(item.embedding as number[]);
  }
}

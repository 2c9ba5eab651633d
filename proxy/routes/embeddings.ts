// POST /v1/embeddings (EMB-1, EMB-2), billed per input token. The engine is always asked for
// floats and the proxy encodes base64 itself (little-endian float32), so the encoding is exactly
// the spec's whatever the engine supports.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.ts';
import type { CallCharge } from '../billing/charge.ts';
import {
  embeddingPromptTokens,
  type TextUsage,
  textBill,
  textQuote,
  usageFromEngine,
} from '../billing/text-quote.ts';
import type { ProxyContext } from '../context.ts';
import { callEngine, type EngineCall, engineClientError } from '../engine/call.ts';
import { linkRequestAbort } from '../request-abort.ts';
import {
  commonErrors,
  type EmbeddingsRequest,
  embeddingsRequest,
  embeddingsResponse,
} from '../schemas/openai.ts';
import { checkEmbeddingInputs } from './context-fit.ts';
import { tokenModel } from './resolve-model.ts';
import { requestFailure } from './text-call.ts';

export async function embeddingsRoutes(app: FastifyInstance, opts: { ctx: ProxyContext }) {
  const { ctx } = opts;
  app.post(
    '/embeddings',
    {
      config: { dialect: 'openai' },
      schema: {
        summary: 'Create embeddings',
        tags: ['chat-completions dialect'],
        body: embeddingsRequest,
        response: { 200: embeddingsResponse, ...commonErrors },
      },
    },
    (request, reply) => handleEmbeddings(ctx, request, reply),
  );
}

async function handleEmbeddings(ctx: ProxyContext, request: FastifyRequest, reply: FastifyReply) {
  const body = request.body as EmbeddingsRequest;
  const { entry, price } = tokenModel(ctx.catalogue, request.principal, body.model, 'embedding');
  request.metricModel = entry.id;
  checkEmbeddingInputs(entry, body.input);
  // Token ids and text alike: the serialized input's bytes bound its token count from above.
  const inputs = Array.isArray(body.input) ? body.input.length : 1;
  const quote = textQuote(
    price,
    embeddingPromptTokens(Buffer.byteLength(JSON.stringify(body.input)), inputs),
    0,
  );
  const abort = linkRequestAbort(request, reply);
  const payload = JSON.stringify({ ...body, model: entry.servedName ?? entry.id, encoding_format: 'float' });
  let charge: CallCharge | undefined;
  try {
    charge = ctx.billing.open(
      {
        principal: request.principal,
        model: entry.id,
        kind: 'embedding',
        requestId: request.id,
        cancel: abort.cancel,
      },
      quote,
    );
    const result = await charge.hold({
      run: async (_out, cancel) => {
        const tried = new Set<string>();
        const call = await callEngine(ctx.engine, { entry, path: '/v1/embeddings', payload, cancel, tried });
        if (call.statusCode >= 400) {
          call.release();
          throw await engineClientError(call, entry.id);
        }
        return readEmbeddings(call);
      },
      discard: () => {},
    });
    result.json.model = entry.id;
    if (body.encoding_format === 'base64') encodeBase64(result.json);
    const perInput = entry.contextLength;
    const bill = textBill(price, result.usage, { output: 0, input: perInput && perInput * inputs });
    // The answer leaves once its settlement is in the journal (end of this event-loop turn).
    charge.settle(bill.cost, bill.usage, () => {
      abort.dispose();
      reply.send(result.json);
    });
    return reply;
  } catch (err) {
    abort.dispose();
    charge?.release();
    throw requestFailure(err, abort);
  }
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

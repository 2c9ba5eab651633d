// What vLLM refuses only once a request reaches its engine, after its OpenAI server has started
// answering: token ids outside the vocabulary in `stop_token_ids` or `logit_bias` (vLLM 0.32's
// processor checks them after the stream's head). A stream then gets HTTP 200, the error as its
// first frame (`code` a number, `type` BadRequestError), then [DONE]; a non-streamed request gets
// a plain 400 with the same error. The `refuseInEngine` option refuses every chat request that
// way, for callers that cannot send token ids (the Messages dialect).
import type { ServerResponse } from 'node:http';
import { badRequest } from '../http.ts';

/** The simulated tokenizer's vocabulary (Qwen2's size): ids from 0 to this, exclusive. */
import { VOCAB_SIZE } from '../tokenizer.ts';

export { VOCAB_SIZE };

export interface Refusal {
  message: string;
  param: string;
}

/** The request's out-of-vocabulary token ids, as vLLM words the refusal; null when it has none. */
export function engineRefusal(body: Record<string, unknown>, refuseAll: boolean): Refusal | null {
  const stop = Array.isArray(body.stop_token_ids) ? body.stop_token_ids : [];
  const bias =
    typeof body.logit_bias === 'object' && body.logit_bias !== null ? Object.keys(body.logit_bias) : [];
  for (const [param, ids] of [
    ['stop_token_ids', stop],
    ['logit_bias', bias.map(Number)],
  ] as const) {
    const bad = ids.filter((id) => typeof id === 'number' && (id < 0 || id >= VOCAB_SIZE));
    if (bad.length > 0) return outOfVocab(param, bad);
  }
  return refuseAll ? outOfVocab('stop_token_ids', [999_999]) : null;
}

function outOfVocab(param: string, ids: readonly unknown[]): Refusal {
  return {
    message: `token_id(s) [${ids.join(', ')}] in ${param} contain out-of-vocab token ids. Vocabulary size: ${VOCAB_SIZE}`,
    param,
  };
}

/** vLLM's error object for a refusal (its `code` is a number). */
export function refusalError(r: Refusal): Record<string, unknown> {
  return { message: r.message, type: 'BadRequestError', param: r.param, code: 400 };
}

/** The refusal as vLLM sends it: in a stream, 200 + an error frame + [DONE]; else a 400. */
export function sendRefusal(res: ServerResponse, r: Refusal, stream: boolean): void {
  const error = refusalError(r);
  if (!stream) throw badRequest(r.message, r.param);
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.end(`data: ${JSON.stringify({ error })}\n\ndata: [DONE]\n\n`);
}

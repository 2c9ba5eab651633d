// A chat prompt's tokens as the engine counts them: vLLM's /tokenize, given the messages and tools
// a call would send (its chat template and image tokens included). Messages count_tokens answers
// with it, and a text call near its model's context asks it before deciding what fits.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import type { ProxyContext } from '../context.ts';
import { callEngine } from '../engine/call.ts';
import { linkRequestAbort } from '../request-abort.ts';
import type { AdmittedPrompt } from './text-door.ts';

/**
 * The fields of a chat request that change the prompt the engine renders, so /tokenize counts
 * what the call would send: the tools, the template's switches (thinking) and a prefill's
 * continuation.
 */
const TOKENIZE_FIELDS = ['tools', 'chat_template_kwargs', 'add_generation_prompt', 'continue_final_message'];

/**
 * The count, or null where no engine tokenizer answered (an engine without /tokenize). Only an
 * admitted prompt (./text-door.ts): vLLM's /tokenize downloads the images it counts.
 */
export async function engineTokenCount(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  entry: CatalogueEntry,
  admitted: AdmittedPrompt,
): Promise<number | null> {
  const abort = linkRequestAbort(request, reply);
  const fields = admitted.fields;
  let payload = `{"model":${JSON.stringify(entry.servedName ?? entry.id)},"messages":${admitted.prompt}`;
  for (const key of TOKENIZE_FIELDS) {
    const value = fields[key];
    if (value !== undefined && value !== null) payload += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  }
  if (fields.add_generation_prompt === undefined) payload += ',"add_generation_prompt":true';
  payload += '}';
  try {
    const call = await callEngine(ctx.engine, {
      entry,
      path: '/tokenize',
      payload,
      cancel: abort.cancel,
      tried: new Set(),
    });
    try {
      if (call.statusCode !== 200) return null; // no tokenizer endpoint on this engine
      const json = JSON.parse((await call.body.bytes()).toString('utf8')) as { count?: unknown };
      return typeof json.count === 'number' && Number.isSafeInteger(json.count) && json.count >= 0
        ? json.count
        : null;
    } finally {
      call.body.destroy();
      call.release();
    }
  } catch (err) {
    if (abort.cancel.aborted) throw abort.cancel.reason ?? err;
    request.log.info({ err }, 'no engine tokenizer answered; counting with the estimate');
    return null;
  } finally {
    abort.dispose();
  }
}

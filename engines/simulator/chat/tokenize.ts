// POST /tokenize, as vLLM serves it: a chat request (`messages`, optional `tools`) or a bare
// `prompt`, answered with `{count, max_model_len, tokens}`. A chat request's count is exactly the
// prompt_tokens a completion of it reports (text, images and template), which is what the proxy's
// Messages `count_tokens` relies on.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SimContext } from '../context.ts';
import { badRequest, HttpError, parseJsonObject, sendJson } from '../http.ts';
import { tokenId, tokenize } from '../tokenizer.ts';
import { promptTokenCount } from './handler.ts';
import { promptText } from './plan.ts';
import { parseChatRequest } from './request.ts';

export async function handleTokenize(
  ctx: SimContext,
  _req: IncomingMessage,
  res: ServerResponse,
  _params: Record<string, string>,
  body: Buffer,
): Promise<void> {
  if (!ctx.options.tokenizeEndpoint)
    throw new HttpError(404, 'no route for POST /tokenize', null, 'not_found');
  const json = parseJsonObject(body);
  let pieces: string[];
  let count: number;
  if (json.messages !== undefined) {
    const chat = parseChatRequest({ ...json, stream: false, stream_options: undefined });
    pieces = tokenize(promptText(chat));
    count = promptTokenCount(ctx, chat, pieces.length);
  } else if (typeof json.prompt === 'string') {
    pieces = tokenize(json.prompt);
    count = pieces.length;
  } else {
    throw badRequest('either messages or prompt is required', 'messages');
  }
  // Token ids are stand-ins (a hash of each piece); template and image tokens are not listed.
  const tokens = pieces.map(tokenId);
  sendJson(res, 200, { count, max_model_len: ctx.options.maxModelLen, tokens, token_strs: null });
}

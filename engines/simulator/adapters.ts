// vLLM's runtime LoRA routes (served only with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True): load and
// unload an adapter by name. The simulator has no weights, so a "loaded" adapter is only a name
// it now lists in /v1/models with its base as parent, which is what the operator and proxy rely on.

import type { RouteHandler } from './context.ts';
import { HttpError } from './http.ts';

interface LoraBody {
  lora_name?: unknown;
  lora_path?: unknown;
}

function parse(body: Buffer): LoraBody {
  try {
    const v: unknown = JSON.parse(body.toString('utf8'));
    return typeof v === 'object' && v !== null ? (v as LoraBody) : {};
  } catch {
    throw new HttpError(400, 'the body is not JSON', null, 'invalid_request_error');
  }
}

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

// vLLM answers success as plain text, not JSON.
function sendText(res: Parameters<RouteHandler>[2], text: string): void {
  res.writeHead(200, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export const handleLoadLora: RouteHandler = async (ctx, _req, res, _params, body) => {
  const { lora_name, lora_path } = parse(body);
  if (!nonEmpty(lora_name) || !nonEmpty(lora_path))
    throw new HttpError(
      400,
      "Both 'lora_name' and 'lora_path' must be provided.",
      null,
      'invalid_request_error',
    );
  if (ctx.adapters.has(lora_name))
    throw new HttpError(
      400,
      `The lora adapter '${lora_name}' has already been loaded.`,
      null,
      'invalid_request_error',
    );
  ctx.adapters.set(lora_name, lora_path);
  sendText(res, `Success: LoRA adapter '${lora_name}' added successfully.`);
};

export const handleUnloadLora: RouteHandler = async (ctx, _req, res, _params, body) => {
  const { lora_name } = parse(body);
  if (!nonEmpty(lora_name))
    throw new HttpError(
      400,
      "'lora_name' needs to be provided to unload a LoRA adapter.",
      null,
      'invalid_request_error',
    );
  if (!ctx.adapters.delete(lora_name))
    throw new HttpError(404, `The lora adapter '${lora_name}' cannot be found.`, null, 'not_found');
  sendText(res, `Success: LoRA adapter '${lora_name}' removed successfully.`);
};

// Route schemas are zod; this plugs them into fastify. A failed parse becomes a 400
// invalid_request whose message and `param` name the field (`messages[0].role`), before anything
// is reserved or sent to an engine. Responses are not re-validated on the hot path: their schemas
// exist for the API reference.
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { ApiError } from '../../core/errors.ts';

/** `['messages', 0, 'role']` → `messages[0].role`. */
export function paramPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out;
}

export function zodToApiError(error: z.ZodError): ApiError {
  const issue = error.issues[0];
  if (!issue) return new ApiError('invalid_request', 'Invalid request.');
  const param = paramPath(issue.path);
  if (param === '') return new ApiError('invalid_request', `Invalid request body: ${issue.message}`);
  const missing = issue.code === 'invalid_type' && /received undefined$/.test(issue.message);
  const message = missing
    ? `Missing required parameter: '${param}'.`
    : `Invalid value for '${param}': ${issue.message}`;
  return new ApiError('invalid_request', message, { param });
}

export function useZodSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema }) => {
    const zod = schema as unknown as z.ZodType;
    return (data: unknown) => {
      const r = zod.safeParse(data);
      return r.success ? { value: r.data } : { error: zodToApiError(r.error) };
    };
  });
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}

// Route schemas are zod; this plugs them into fastify. A failed parse becomes a 400
// invalid_request whose message and `param` name the field (`messages[0].role`), before anything
// is reserved or sent to an engine. Responses are not re-validated on the hot path: their schemas
// exist for the API reference.
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { ApiError } from '../core/errors.ts';

/** `['messages', 0, 'role']` → `messages[0].role`. */
export function paramPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out;
}

type Issue = z.core.$ZodIssue;

/**
 * The issue that says what is wrong. A union (`content`: a string or blocks) fails as a whole with
 * "Invalid input"; the branch worth naming is the one whose failure is deeper than a mismatched
 * type at the union itself (an unknown block type three levels down), or, of several such, the
 * only one that failed on something other than a type.
 */
export function telling(issue: Issue): Issue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  const branches = issue.errors.filter(
    (errs) =>
      errs.length > 0 &&
      !(errs.length === 1 && errs[0]!.code === 'invalid_type' && errs[0]!.path.length === 0),
  );
  // Several branches may be close (an array of strings or of token ids): the one meant is the one
  // whose values have the right types and break a bound (a negative id, 3000 texts).
  const meant =
    branches.length > 1 ? branches.filter((errs) => errs.some((e) => e.code !== 'invalid_type')) : branches;
  if (meant.length !== 1) return issue;
  const inner = telling(meant[0]![0]!);
  return { ...inner, path: [...issue.path, ...inner.path] };
}

export function zodToApiError(error: z.ZodError): ApiError {
  const first = error.issues[0];
  if (!first) return new ApiError('invalid_request', 'Invalid request.');
  const issue = telling(first);
  if (issue.code === 'unrecognized_keys') {
    // Named like OpenAI names an unknown parameter, with its whole path (`messages[0].content[1].foo`).
    const names = issue.keys.map((k) => paramPath([...issue.path, k]));
    return new ApiError('invalid_request', `Unrecognized request argument supplied: ${names.join(', ')}`, {
      param: names[0]!,
    });
  }
  const param = paramPath(issue.path);
  if (param === '') return new ApiError('invalid_request', `Invalid request body: ${issue.message}`);
  const missing = issue.code === 'invalid_type' && /received undefined$/.test(issue.message);
  const message = missing
    ? `Missing required parameter: '${param}'.`
    : `Invalid value for '${param}': ${issue.message}`;
  return new ApiError('invalid_request', message, { param });
}

export function applyZodSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema }) => {
    const zod = schema as unknown as z.ZodType;
    return (data: unknown) => {
      const r = zod.safeParse(data);
      return r.success ? { value: r.data } : { error: zodToApiError(r.error) };
    };
  });
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}

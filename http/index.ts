// What every HTTP server here shares (DESIGN "may import": `core/` only), so the proxy and the
// console answer alike: the error plugin (one error catalogue from core/errors.ts, rendered in the
// route's dialect, OpenAI's or Messages'), JSON body parsing, request ids on every response, and
// zod route schemas as fastify validators. Nothing here knows about credits, engines or sessions.
export { ClientClosedError, ClientStalledError } from './client-closed.ts';
export { type Dialect, dialectOf, dialectOfPath, errorBody } from './dialect.ts';
export { clientError, errorsPlugin, frameworkError, logFailure, sendError, toApiError } from './errors.ts';
export { jsonBodyPlugin } from './json-body.ts';
export { redactQuery } from './redact-url.ts';
export { requestIdPlugin } from './request-id.ts';
export { applyZodSchemas, zodToApiError } from './validation.ts';

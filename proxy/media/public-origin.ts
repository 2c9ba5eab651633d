// The origin of links the proxy hands out (signed /files links, video content redirects).
import type { FastifyRequest } from 'fastify';
import type { ProxyContext } from '../context.ts';

/** Where clients reach this proxy: PROXY_PUBLIC_URL, else the request's own scheme and host. */
export function publicOrigin(ctx: ProxyContext, request: FastifyRequest): string {
  return ctx.config.PROXY_PUBLIC_URL ?? `${request.protocol}://${request.host}`;
}

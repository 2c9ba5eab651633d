// How the console logs a request (issue 24 item 1). An invitation link's token is all an
// acceptance needs, and it travels in the path (/invite/<token>, /api/invitations/<token>), so the
// request line is logged with that segment masked and every query value dropped — as the proxy
// masks keys pasted into URLs. Cookies, the CSRF header and signatures are redacted by pino paths.
import type { FastifyRequest } from 'fastify';
import { redactQuery } from '../http/redact-url.ts';

/** Paths whose next segment is a credential (an invitation token). */
const TOKEN_IN_PATH = /^(\/invite\/|\/api\/invitations\/)(?!accept(?:[/?]|$))[^/?#]+/;

export function redactConsoleUrl(raw: string): string {
  return redactQuery(raw.replace(TOKEN_IN_PATH, '$1[redacted]'));
}

/** pino `req` serializer for the console: method, the masked URL, host and client address. */
export function consoleRequestForLog(req: FastifyRequest): {
  method: string;
  url: string;
  host: string;
  remoteAddress: string;
} {
  return { method: req.method, url: redactConsoleUrl(req.url), host: req.hostname, remoteAddress: req.ip };
}

// The pages: the React app (console/web, built by `vite build`) answers every page path with its
// index.html and routes itself; /docs is the API reference, Redoc rendering the proxy's own
// /openapi.json (fetched server-side, so no CORS set-up and no third-party host is involved).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../core/errors.ts';

/** Every path the web app draws (console/web/src/main.tsx); /invite/<token> too. */
export const PAGES = [
  '/',
  '/api',
  '/playground',
  '/signin',
  '/usage',
  '/batches',
  '/pricing',
  '/billing',
  '/team',
  '/profile',
] as const;

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};
// The app is our own bundle: nothing inline, nothing from elsewhere but the API itself — the
// Playground calls it from the browser, shows images it returns and plays videos from its signed
// links. Redoc styles itself inline (styled-components) and searches in a worker it makes from a blob.
const appCsp = (apiOrigin: string) =>
  `default-src 'self'; img-src 'self' data: ${apiOrigin}; media-src 'self' ${apiOrigin}; style-src 'self'; script-src 'self'; connect-src 'self' ${apiOrigin}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`;
const DOCS_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; worker-src blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

export async function pageRoutes(
  app: FastifyInstance,
  opts: { webDir: string; openApiUrl: string; apiOrigin: string },
) {
  const APP_CSP = appCsp(opts.apiOrigin);
  app.addHook('onSend', async (request, reply) => {
    reply.headers(SECURITY_HEADERS);
    if (!request.url.startsWith('/api/'))
      reply.header('content-security-policy', request.url.startsWith('/docs') ? DOCS_CSP : APP_CSP);
  });

  const dir = opts.webDir;
  const built = existsSync(`${dir}/index.html`);
  if (built) await app.register(fastifyStatic, { root: dir, wildcard: false, index: false });
  for (const page of [...PAGES, '/invite/:token'])
    app.get(page, async (_request, reply) =>
      built
        ? reply.header('cache-control', 'no-cache').sendFile('index.html')
        : reply
            .code(503)
            .type('text/plain')
            .send('The console web app is not built: run `make console-web`.'),
    );

  const redoc = `${dirname(createRequire(import.meta.url).resolve('redoc/package.json'))}/bundles/redoc.standalone.js`;
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(DOCS_HTML));
  // Redoc's sidebar loads its maker's logo from cdn.redoc.ly on every view: a request to a third
  // party that a closed network refuses (and the CSP blocks). The bundle is served with that one
  // address swapped for an empty image; the "API docs by Redocly" credit stays.
  const bundle = readFileSync(redoc, 'utf8').replace(
    'https://cdn.redoc.ly/redoc/logo-mini.svg',
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E",
  );
  app.get('/docs/redoc.standalone.js', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=86400').type('text/javascript').send(bundle),
  );
  let cached: { at: number; body: string } | null = null;
  app.get('/docs/openapi.json', async (_request, reply) => {
    if (cached === null || Date.now() - cached.at > 60_000) {
      const res = await fetch(opts.openApiUrl, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
      if (!res?.ok)
        throw new ApiError('server_error', `The API reference could not be read from ${opts.openApiUrl}.`, {
          retryAfterS: 5,
        });
      cached = { at: Date.now(), body: await res.text() };
    }
    return reply.type('application/json').send(cached.body);
  });
  app.get('/docs/init.js', async (_request, reply) => reply.type('text/javascript').send(DOCS_INIT));
}

/**
 * A path no route knows, opened by a browser: the app with a 404 status, which draws "Page not
 * found" inside the console's frame. A client that does not ask for HTML (and any /api/ path)
 * gets the JSON 404 instead.
 */
export function appNotFoundPage(webDir: string, apiOrigin: string) {
  return (request: FastifyRequest, reply: FastifyReply): boolean => {
    const index = `${webDir}/index.html`;
    if (request.url.startsWith('/api/') || !request.headers.accept?.includes('text/html')) return false;
    if (!existsSync(index)) return false;
    void reply
      .code(404)
      .header('cache-control', 'no-cache')
      .header('content-security-policy', appCsp(apiOrigin))
      .headers(SECURITY_HEADERS)
      .type('text/html; charset=utf-8')
      .send(readFileSync(index));
    return true;
  };
}

/** The manual behind the reference (dialects, errors, costs, limits, editor tools), in the repository. */
export const API_MANUAL_URL = 'https://github.com/modelplane/modelplane/blob/main/docs/api.md';

// No inline script (the CSP forbids it): init.js starts Redoc on the spec.
const DOCS_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>API Reference</title>
    <link rel="icon" href="data:," />
  </head>
  <body>
    <p style="margin:0.5rem 1rem;font-family:system-ui,sans-serif"><a href="/api">← API Management</a> ·
      <a href="${API_MANUAL_URL}">The API manual</a>: the three dialects, errors, what a call costs, limits, editor tools</p>
    <main id="redoc"></main>
    <script src="/docs/redoc.standalone.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;

const DOCS_INIT = `Redoc.init('/docs/openapi.json', {
  hideDownloadButton: false,
  expandResponses: '200',
  theme: { typography: { fontFamily: 'system-ui, sans-serif', headings: { fontFamily: 'system-ui, sans-serif' } } },
}, document.getElementById('redoc'));
`;

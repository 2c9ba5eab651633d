// Baseline (b) of the proxy benchmark: the least a Node proxy can do — fastify receives the request,
// undici forwards the body over a keep-alive pool, the response is piped back. No auth, no
// billing, no parsing of frames. The full proxy is measured against this.
//   tsx bench/proxy/bare.ts --port 9100 --upstream http://127.0.0.1:9001
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { Pool } from 'undici';

const { values } = parseArgs({ options: { port: { type: 'string' }, upstream: { type: 'string' } } });
const upstream = new URL(values.upstream ?? 'http://127.0.0.1:9001');
const pool = new Pool(upstream.origin, { connections: 256, keepAliveTimeout: 30_000 });
const app = Fastify({ logger: false, bodyLimit: 32 * 1024 * 1024 });

// Bodies are forwarded as raw bytes: the baseline does not even parse JSON.
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

app.post('/v1/*', async (request, reply) => {
  const res = await pool.request({
    method: 'POST',
    path: request.url,
    headers: { 'content-type': 'application/json' },
    body: request.body as Buffer,
  });
  reply.code(res.statusCode);
  const type = res.headers['content-type'];
  if (typeof type === 'string') reply.header('content-type', type);
  return reply.send(res.body);
});

await app.listen({ host: '127.0.0.1', port: Number(values.port ?? 9100) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));

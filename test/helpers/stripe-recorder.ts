// A recording proxy between the console and stripe-mock (Stripe's own mock, not ours): it passes
// every call through unchanged and keeps what the SDK sent, as Stripe would have received it, and
// what came back — the tests' evidence of how many charges were asked for, with which keys.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Between the console and stripe-mock: what the SDK sent, as Stripe would have received it. */
export interface RecordingProxy {
  url: string;
  sent: {
    method: string;
    path: string;
    form: URLSearchParams;
    idempotencyKey: string | null;
    /** stripe-mock's answer, parsed (filled in once it came) */
    answer?: unknown;
    /** Dropped while `down` (Stripe unreachable): the request was recorded, no answer came. */
    dropped?: true;
  }[];
  /** While true every call is recorded and its connection dropped unanswered, as in an outage. */
  down: boolean;
  close(): Promise<void>;
}

export async function recordingProxy(target: string): Promise<RecordingProxy> {
  const sent: RecordingProxy['sent'] = [];
  const proxy = { down: false };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const idem = req.headers['idempotency-key'];
    const entry: RecordingProxy['sent'][number] = {
      method: req.method ?? '',
      path: req.url ?? '',
      form: new URLSearchParams(body.toString()),
      idempotencyKey: typeof idem === 'string' ? idem : null,
    };
    sent.push(entry);
    if (proxy.down) {
      entry.dropped = true;
      req.socket.destroy();
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'content-type', 'stripe-version', 'idempotency-key']) {
      const v = req.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    const r = await fetch(`${target}${req.url}`, {
      method: req.method ?? 'GET',
      headers,
      ...(body.length > 0 ? { body } : {}),
    });
    const answer = Buffer.from(await r.arrayBuffer());
    try {
      entry.answer = JSON.parse(answer.toString());
    } catch {}
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
    res.end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${port}`,
    sent,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

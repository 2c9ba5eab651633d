// A multipart upload written by hand on a raw socket, chunked, for tests of what a server does
// with a body it must not read to the end: a part can be endless (zeros for as long as the server
// reads). The server's own count of the bytes it read is taken from its side of the connection.
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawPart {
  name: string;
  /** Makes the part a file. */
  filename?: string;
  type?: string;
  /** The part's bytes; `endless`: the part never ends; `endless-headers`: its headers never do. */
  data: Buffer | string | 'endless' | 'endless-headers';
}

export interface RawUploadResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** ms from the first byte sent to the whole answer read. */
  answeredMs: number;
  /** Bytes the server read from this connection (its socket's bytesRead, once it closed). */
  serverBytesRead: number;
  /**
   * Bytes the server had read when it began to write its answer: what it read to decide. After
   * an answer to a body it did not read to the end it drains a bounded amount more (RFC 9112 §9.6).
   */
  serverBytesReadBeforeAnswer: number;
  /** Whether the server closed the connection (within 2 s of an answer that said it would). */
  serverClosed: boolean;
}

const BOUNDARY = '----rawupload7MA4YWxkTrZu0gW';

/** Watches a server's connections so a test can read the server's side of one. */
export function watchConnections(server: Server): (clientPort: number) => Socket | undefined {
  const sockets: Socket[] = [];
  server.on('connection', (s: Socket) => {
    sockets.push(s);
    s.once('close', () => setTimeout(() => sockets.splice(sockets.indexOf(s), 1), 10_000).unref());
  });
  return (port) => sockets.find((s) => s.remotePort === port);
}

export async function rawUpload(o: {
  url: string;
  path: string;
  headers: Record<string, string>;
  parts: RawPart[];
  serverSide: (clientPort: number) => Socket | undefined;
  /** Stops sending after this long whatever happens (a test that fails still ends). */
  timeoutMs?: number;
}): Promise<RawUploadResult> {
  const { hostname, port } = new URL(o.url);
  const socket = connect({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const server = o.serverSide(socket.localPort!);
  if (server === undefined) throw new Error('the server side of the connection was not found');
  let readBeforeAnswer = -1;
  const serverWrite = server.write;
  server.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (readBeforeAnswer < 0) readBeforeAnswer = server.bytesRead;
    return serverWrite.apply(this, args);
  } as Socket['write'];
  const serverClosed = new Promise<boolean>((resolve) => {
    if (server.destroyed) resolve(true);
    else server.once('close', () => resolve(true));
  });
  let response = Buffer.alloc(0);
  let stopped = false;
  const answered = new Promise<void>((resolve) => {
    const done = () => {
      stopped = true;
      resolve();
    };
    socket.on('data', (d: Buffer) => {
      response = Buffer.concat([response, d]);
      const head = response.indexOf('\r\n\r\n');
      if (head < 0) return;
      const length = Number(
        /content-length: *(\d+)/i.exec(response.subarray(0, head).toString('latin1'))?.[1],
      );
      if (response.length >= head + 4 + length) done();
    });
    socket.on('close', done);
    socket.on('error', done);
  });
  const t0 = performance.now();
  const write = (b: Buffer) =>
    new Promise<void>((resolve) => {
      if (stopped || socket.destroyed) return resolve();
      const chunk = Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]);
      if (socket.write(chunk)) resolve();
      else {
        const go = () => {
          socket.off('drain', go);
          socket.off('close', go);
          resolve();
        };
        socket.on('drain', go);
        socket.on('close', go);
      }
    });
  const headers = Object.entries({
    host: `${hostname}:${port}`,
    'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
    'transfer-encoding': 'chunked',
    ...o.headers,
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.write(`POST ${o.path} HTTP/1.1\r\n${headers}\r\n`);
  const deadline = Date.now() + (o.timeoutMs ?? 20_000);
  const zeros = Buffer.alloc(256 * 1024);
  const send = async () => {
    for (const p of o.parts) {
      const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
      const type = p.type ?? (p.filename === undefined ? undefined : 'image/png');
      const head = `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${type ? `Content-Type: ${type}\r\n` : ''}`;
      if (p.data === 'endless-headers') {
        await write(Buffer.from(`${head}X-Pad: `));
        while (!stopped && !socket.destroyed && Date.now() < deadline)
          await write(Buffer.alloc(zeros.length, 97));
        return;
      }
      await write(Buffer.from(`${head}\r\n`));
      if (p.data === 'endless') {
        while (!stopped && !socket.destroyed && Date.now() < deadline) await write(zeros);
        return;
      }
      await write(Buffer.from(p.data));
      await write(Buffer.from('\r\n'));
    }
    await write(Buffer.from(`--${BOUNDARY}--\r\n`));
    if (!stopped && !socket.destroyed) socket.write('0\r\n\r\n');
  };
  await Promise.all([
    send(),
    Promise.race([answered, new Promise((r) => setTimeout(r, o.timeoutMs ?? 20_000))]),
  ]);
  const answeredMs = performance.now() - t0;
  // A kept-alive connection is not waited on: it stays open by design.
  const keptAlive = !/connection: *close/i.test(
    response.toString('latin1', 0, Math.max(0, response.indexOf('\r\n\r\n'))),
  );
  const closed = await Promise.race([
    serverClosed,
    new Promise<boolean>((r) => setTimeout(() => r(false), keptAlive ? 0 : 2_000)),
  ]);
  socket.destroy();
  const head = response.indexOf('\r\n\r\n');
  const lines = response.subarray(0, Math.max(0, head)).toString('latin1').split('\r\n');
  return {
    status: Number(lines[0]?.split(' ')[1] ?? 0),
    headers: Object.fromEntries(
      lines
        .slice(1)
        .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    ),
    body: head < 0 ? '' : response.subarray(head + 4).toString('utf8'),
    answeredMs,
    serverBytesRead: server.bytesRead,
    serverBytesReadBeforeAnswer: readBeforeAnswer < 0 ? server.bytesRead : readBeforeAnswer,
    serverClosed: closed,
  };
}

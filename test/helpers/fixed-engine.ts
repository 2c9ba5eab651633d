// An engine that answers every POST with the JSON it is told to (a real HTTP server on loopback),
// to play engines the simulator will not: ones that misreport usage or report none.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FixedEngine {
  url: string;
  /** The next answers' body. */
  answer(body: unknown): void;
  close(): Promise<void>;
}

export async function startFixedEngine(first: unknown): Promise<FixedEngine> {
  let body = JSON.stringify(first);
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    answer(b) {
      body = JSON.stringify(b);
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

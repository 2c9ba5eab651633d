// A listener on loopback that stands for a service inside the network: it counts every connection
// made to it (and drops it), so a test can show no refused request made an engine call it.
import { createServer } from 'node:net';

export interface InternalListener {
  port: number;
  /** Connections made so far. */
  connections(): number;
  close(): Promise<void>;
}

export async function internalListener(): Promise<InternalListener> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

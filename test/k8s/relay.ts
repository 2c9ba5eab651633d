// A TCP relay in front of the API server that the test can make go silent: hang() stops moving
// bytes both ways on every connection, open and new, without closing any — no FIN, no RST, the way
// one member of a multi-server control plane goes quiet behind a load balancer. resume() moves
// what queued meanwhile, as a stalled server answers on waking. TLS passes through untouched (the
// serving cert names 127.0.0.1), so a client only needs the relay's port in its kubeconfig.
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { TestCluster } from './cluster.ts';

export interface ApiRelay {
  /** A kubeconfig like the cluster's, through the relay. */
  kubeConfig: KubeConfig;
  hang(): void;
  resume(): void;
  /** Every open connection goes silent for good (a flow a NAT or load balancer dropped); new ones work. */
  strand(): void;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startApiRelay(cluster: TestCluster): Promise<ApiRelay> {
  const upstream = new URL(cluster.server);
  const sockets = new Set<Socket>();
  const stranded = new Set<Socket>();
  let hung = false;
  let connections = 0;

  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
    if (hung) s.pause();
  };
  const server: Server = createServer((client) => {
    connections++;
    const api = netConnect(Number(upstream.port), upstream.hostname);
    track(client);
    track(api);
    forward(client, api);
    forward(api, client);
  });
  // By hand rather than pipe(): a pipe resumes its source whenever the destination drains, which
  // would undo a hang.
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (!hung) from.resume();
    });
    from.on('end', () => to.end());
    from.on('close', () => to.destroy());
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: 'relay',
        server: `https://127.0.0.1:${port}`,
        caData: cluster.ca.toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'admin', token: cluster.token }],
    contexts: [{ name: 'relay', cluster: 'relay', user: 'admin', namespace: 'default' }],
    currentContext: 'relay',
  });

  return {
    kubeConfig,
    get connections() {
      return connections;
    },
    hang() {
      hung = true;
      // A paused socket is not read: bytes wait in the kernel and the peer sees a silent connection.
      for (const s of sockets) s.pause();
    },
    resume() {
      hung = false;
      for (const s of sockets) s.resume();
    },
    strand() {
      for (const s of sockets) {
        s.pause();
        s.removeAllListeners('drain');
        stranded.add(s);
      }
      sockets.clear();
    },
    async close() {
      for (const s of [...sockets, ...stranded]) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// A port for a child process to listen on (engines of the local runtime, the test harness's
// redis-server, etcd and kube-apiserver). Chosen at random below the kernel's ephemeral range, not
// with bind(0): a port from that range can be taken by any outgoing connection on the machine
// between our check and the child's own bind, and the child then exits (CI saw etcd do so).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const FLOOR = 10_000;

// Ports handed out by this process, never handed out twice (etcd asks for several in a row).
const handedOut = new Set<number>();

/** Lowest port of the kernel's ephemeral range (bind(0) and outgoing connections draw from it). */
function ephemeralFloor(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > FLOOR + 1_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** A port free now on `host`, below the ephemeral range. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const span = ephemeralFloor() - FLOOR;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = FLOOR + Math.floor(Math.random() * span);
    if (handedOut.has(port)) continue;
    handedOut.add(port); // before the check, so concurrent callers never draw the same port
    if (await canListen(port, host)) return port;
    handedOut.delete(port);
  }
  throw new Error('no free port below the ephemeral range after 200 tries');
}

// stripe-mock (Stripe's own mock of its API, from its OpenAPI spec) per test file, on a free port,
// stopped after: the Stripe payment provider creates real Checkout Sessions against it through the
// official SDK. Built from the Go module proxy by test/stripe/build-stripe-mock.sh, cached outside
// the repo. stripe-mock keeps no state (a session created is not there to fetch), so the webhook
// half of a test signs its own events with the endpoint secret, as Stripe would.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { freePort } from '../../core/free-port.ts';

export interface TestStripeMock {
  /** For STRIPE_API_URL. */
  url: string;
  stop(): Promise<void>;
}

export async function startStripeMock(): Promise<TestStripeMock> {
  const bin = execFileSync(new URL('../stripe/build-stripe-mock.sh', import.meta.url).pathname, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  const port = await freePort();
  // It serves HTTPS too, by default on a fixed port of every interface: a port the system
  // chooses on loopback instead, so two test files never collide on it.
  const proc: ChildProcess = spawn(bin, ['-http-addr', `127.0.0.1:${port}`, '-https-addr', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (b: Buffer) => {
    log = (log + b.toString()).slice(-4_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`stripe-mock exited (${proc.exitCode}): ${log}`);
    try {
      // Any answer means it listens (this one is a 401: no key).
      await fetch(`${url}/v1/balance`);
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`stripe-mock did not start: ${log}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { url, stop };
}

// One engine as a local child process: started, probed until its port accepts connections,
// restarted with backoff if it dies, and stopped (SIGTERM, then SIGKILL) when its Model goes away.
import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import type { Logger } from 'pino';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd: string;
  host: string;
  port: number;
  /** The simulator's KV-event ports (PUB, replay), published beside the endpoint (operator/fleet/kv-events.ts). */
  kvPorts?: { events: number; replay: number };
}

export class EngineProcess {
  private child: ChildProcess | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failures = 0;
  private startedAt = 0;
  ready = false;
  restarts = 0;

  constructor(
    readonly spec: ProcessSpec,
    private readonly log: Logger,
    private readonly onReadyChange: (ready: boolean) => void,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get url(): string {
    return `http://${this.spec.host}:${this.spec.port}`;
  }

  start(): void {
    const { command, args, cwd, env, name } = this.spec;
    this.startedAt = Date.now();
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout?.on('data', (b: Buffer) => this.log.debug({ engine: name }, b.toString().trimEnd()));
    child.stderr?.on('data', (b: Buffer) => this.log.debug({ engine: name }, b.toString().trimEnd()));
    child.on('error', (err) => this.log.warn({ engine: name, err: err.message }, 'engine failed to start'));
    child.on('exit', (code, signal) => this.exited(child, code, signal));
    this.log.info({ engine: name, command, args, port: this.spec.port }, 'engine started');
    this.probe();
  }

  /** SIGTERM, then SIGKILL after `graceMs` (a draining engine gets its drain time). */
  async stop(graceMs = 5_000): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    clearTimeout(this.probeTimer);
    this.setReady(false);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(force);
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) return;
    this.setReady(false);
    clearTimeout(this.probeTimer);
    if (this.stopped) return;
    // A process that ran a while was healthy; start its backoff over.
    if (Date.now() - this.startedAt > 30_000) this.failures = 0;
    const delay = Math.min(10_000, 500 * 2 ** this.failures++);
    this.log.warn({ engine: this.spec.name, code, signal, restartInMs: delay }, 'engine exited; restarting');
    this.restartTimer = setTimeout(() => {
      this.restarts++;
      this.start();
    }, delay);
    this.restartTimer.unref();
  }

  /** Ready once the port accepts a TCP connection; a live process is then assumed to serve. */
  private probe(): void {
    const child = this.child;
    const socket = createConnection({ host: this.spec.host, port: this.spec.port });
    socket.setTimeout(1_000);
    const retry = () => {
      socket.destroy();
      if (this.stopped || child !== this.child || child?.exitCode !== null) return;
      this.probeTimer = setTimeout(() => this.probe(), 100);
      this.probeTimer.unref();
    };
    socket.once('connect', () => {
      socket.end();
      if (!this.stopped && child === this.child) this.setReady(true);
    });
    socket.once('error', retry);
    socket.once('timeout', retry);
  }

  private setReady(ready: boolean): void {
    if (this.ready === ready) return;
    this.ready = ready;
    this.onReadyChange(ready);
  }
}

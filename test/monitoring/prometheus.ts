// A real Prometheus (Debian's package, scripts/system-deps.sh prometheus) for tests: scrapes the
// given targets every second into a throwaway folder, on a free loopback port, killed after.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../core/free-port.ts';

export interface ScrapeJob {
  job: string;
  /** host:port, with labels of its own (pod, …). */
  targets: { address: string; labels?: Record<string, string> }[];
}

export interface TestPrometheus {
  url: string;
  /** An instant query's result vector (or matrix), as the HTTP API returns it. */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Every configured target scraped successfully at least once. */
  allUp(): Promise<boolean>;
  stop(): Promise<void>;
}

export async function startPrometheus(jobs: ScrapeJob[]): Promise<TestPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'mp-prom-'));
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
    scrape_configs: jobs.map((j) => ({
      job_name: j.job,
      static_configs: j.targets.map((t) => ({ targets: [t.address], labels: t.labels ?? {} })),
    })),
  };
  writeFileSync(join(dir, 'prometheus.yml'), stringify(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const proc: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  proc.stderr?.on('data', (b: Buffer) => {
    output = (output + b.toString()).slice(-4000);
  });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited (${proc.exitCode}):\n${output}`);
    }
    if (
      await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus not ready after 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const query = async (expr: string) => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as { status: string; error?: string; data?: { result: [] } };
    if (body.status !== 'success') throw new Error(`query ${expr} failed: ${body.error}`);
    return body.data?.result ?? [];
  };
  const allUp = async () => {
    const body = (await (await fetch(`${url}/api/v1/targets`)).json()) as {
      data: { activeTargets: { health: string }[] };
    };
    const targets = body.data.activeTargets;
    return (
      targets.length === jobs.flatMap((j) => j.targets).length && targets.every((t) => t.health === 'up')
    );
  };
  return { url, query, allUp, stop };
}

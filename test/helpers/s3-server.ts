// A real S3-compatible server per test file, on a free port, with one bucket, stopped (killed,
// folder removed) after. Two servers, so the S3 store is not fitted to one implementation's
// quirks: Versity Gateway with its posix backend (test/s3/build-s3-server.sh; the default) and
// MinIO (test/s3/build-minio.sh). Both are built from the Go module proxy, cached outside the repo.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from '../../core/free-port.ts';

export type S3Server = 'versitygw' | 'minio';

export interface TestS3 {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

interface Launch {
  script: string;
  args(o: { port: number; dir: string; accessKeyId: string; secretAccessKey: string }): string[];
  env(o: { dir: string; accessKeyId: string; secretAccessKey: string }): Record<string, string>;
}

const LAUNCH: Record<S3Server, Launch> = {
  versitygw: {
    script: 'build-s3-server.sh',
    args: (o) => [
      '--access',
      o.accessKeyId,
      '--secret',
      o.secretAccessKey,
      '--port',
      `127.0.0.1:${o.port}`,
      'posix',
      o.dir,
    ],
    env: () => ({}),
  },
  minio: {
    script: 'build-minio.sh',
    args: (o) => ['server', '--quiet', '--address', `127.0.0.1:${o.port}`, join(o.dir, 'data')],
    env: (o) => ({
      MINIO_ROOT_USER: o.accessKeyId,
      MINIO_ROOT_PASSWORD: o.secretAccessKey,
      MINIO_BROWSER: 'off',
      // MinIO makes ~/.minio (certificates, even with --certs-dir elsewhere): keep it in the folder.
      HOME: o.dir,
    }),
  },
};

export async function startS3(server: S3Server = 'versitygw'): Promise<TestS3> {
  const launch = LAUNCH[server];
  const bin = execFileSync(new URL(`../s3/${launch.script}`, import.meta.url).pathname, {
    encoding: 'utf8',
  }).trim();
  const dir = mkdtempSync(join(tmpdir(), 'mp-s3-'));
  const port = await freePort();
  const accessKeyId = `test${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(20).toString('hex');
  const proc: ChildProcess = spawn(bin, launch.args({ port, dir, accessKeyId, secretAccessKey }), {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...launch.env({ dir, accessKeyId, secretAccessKey }) },
  });
  let err = '';
  proc.stderr?.on('data', (b: Buffer) => {
    err += b.toString();
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  const bucket = 'media';
  try {
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`${server} exited (${proc.exitCode}): ${err}`);
      try {
        await client.send(new CreateBucketCommand({ Bucket: bucket }));
        break;
      } catch (e) {
        if (i > 100) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (e) {
    await stop();
    throw e;
  } finally {
    client.destroy();
  }
  return { endpoint, region: 'us-east-1', bucket, accessKeyId, secretAccessKey, stop };
}

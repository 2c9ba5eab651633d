// A real S3-compatible server per test file: Versity Gateway (built by test/s3/build-s3-server.sh,
// cached outside the repo) with its posix backend on a temporary folder, on a free port, with one
// bucket. Stopped (killed, folder removed) after.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from '../../core/free-port.ts';

export interface TestS3 {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  stop(): Promise<void>;
}

const build = new URL('../s3/build-s3-server.sh', import.meta.url).pathname;

export async function startS3(): Promise<TestS3> {
  const bin = execFileSync(build, { encoding: 'utf8' }).trim();
  const dir = mkdtempSync(join(tmpdir(), 'mp-s3-'));
  const port = await freePort();
  const accessKeyId = `test${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(20).toString('hex');
  const proc: ChildProcess = spawn(
    bin,
    ['--access', accessKeyId, '--secret', secretAccessKey, '--port', `127.0.0.1:${port}`, 'posix', dir],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
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
      if (proc.exitCode !== null) throw new Error(`versitygw exited (${proc.exitCode}): ${err}`);
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

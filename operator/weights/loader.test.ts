// The loader's copy, run for real: from a folder (a mounted claim) and from a real S3-compatible
// server (MinIO), the second through the same command line a loader Job runs, credentials only in
// its environment. What kwok cannot do (test/k8s/weights.test.ts runs no container) is done here.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3, type TestS3 } from '../../test/helpers/s3-server.ts';
import { COMPLETE_MARKER, evictWeights, loadWeights } from './loader.ts';

const run = promisify(execFile);
let s3: TestS3;
let root: string;

const files: Record<string, string> = {
  'config.json': '{"architectures":["LlamaForCausalLM"]}',
  'tokenizer.json': '{"model":{}}',
  'model-00001-of-00002.safetensors': 'a'.repeat(70_000),
  'model-00002-of-00002.safetensors': 'b'.repeat(30_000),
  'nested/generation_config.json': '{"temperature":0.6}',
};
async function same(dir: string): Promise<void> {
  for (const [name, body] of Object.entries(files))
    expect(await readFile(join(dir, name), 'utf8')).toBe(body);
}

beforeAll(async () => {
  [s3, root] = await Promise.all([startS3('minio'), mkdtemp(join(tmpdir(), 'mp-loader-'))]);
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  await client.send(new CreateBucketCommand({ Bucket: 'weights' })).catch(() => {});
  for (const [name, body] of Object.entries(files))
    await client.send(new PutObjectCommand({ Bucket: 'weights', Key: `llama-8b/${name}`, Body: body }));
  // A neighbour under a longer prefix must not be taken for ours.
  await client.send(new PutObjectCommand({ Bucket: 'weights', Key: 'llama-8b-old/config.json', Body: '{}' }));
  client.destroy();
}, 120_000);

afterAll(async () => {
  await s3?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the weight loader (what a loader Job runs)', () => {
  it('copies a folder (a mounted claim) into place with a completion marker; a second run copies nothing; evict removes it', async () => {
    const source = join(root, 'claim', 'llama');
    for (const [name, body] of Object.entries(files)) {
      await mkdir(join(source, name, '..'), { recursive: true });
      await writeFile(join(source, name), body);
    }
    const to = join(root, 'cache', 'models', 'llama-u1');
    const first = await loadWeights({ from: `dir:${source}`, to });
    expect(first).toMatchObject({ files: 5, skipped: false });
    await same(to);
    expect(JSON.parse(await readFile(join(to, COMPLETE_MARKER), 'utf8'))).toMatchObject({ files: 5 });
    // No partial folder left beside it.
    expect(await readdir(join(root, 'cache', 'models'))).toEqual(['llama-u1']);
    expect(await loadWeights({ from: `dir:${source}`, to })).toEqual({ files: 0, bytes: 0, skipped: true });
    await evictWeights(to);
    expect(await readdir(join(root, 'cache', 'models'))).toEqual([]);
  });

  it('a leftover folder without the marker (a copy cut short) is replaced whole, never trusted', async () => {
    const source = join(root, 'claim2');
    await mkdir(source, { recursive: true });
    await writeFile(join(source, 'config.json'), '{}');
    const to = join(root, 'cache2', 'models', 'x-u1');
    await mkdir(to, { recursive: true });
    await writeFile(join(to, 'stale.bin'), 'half');
    expect(await loadWeights({ from: `dir:${source}`, to })).toMatchObject({ files: 1, skipped: false });
    expect((await readdir(to)).sort()).toEqual([COMPLETE_MARKER, 'config.json']);
  });

  it('loads from MinIO through the command line a Job runs, the keys only in its environment, and a re-run copies nothing', async () => {
    const to = join(root, 's3cache', 'models', 'llama-u2');
    const env = {
      ...process.env,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    };
    const cli = ['tsx', 'operator/weights/loader.ts', 'load', '--from', 's3://weights/llama-8b', '--to', to];
    const first = await run('npx', [...cli, '--endpoint', s3.endpoint, '--region', s3.region], { env });
    await same(to);
    expect((await readdir(to)).sort()).toEqual(
      [COMPLETE_MARKER, ...Object.keys(files).map((f) => f.split('/')[0])].sort(),
    );
    expect(first.stdout).toMatch(/5 file\(s\), 100\d+ bytes/);
    expect(first.stdout + first.stderr).not.toContain(s3.secretAccessKey);
    const second = await run('npx', [...cli, '--endpoint', s3.endpoint], { env });
    expect(second.stdout).toMatch(/nothing to copy/);
  });

  it('wrong keys fail the load (the Job retries, then fails) and leave no folder an engine could open', async () => {
    const to = join(root, 'bad', 'models', 'llama-u3');
    const env = { ...process.env, AWS_ACCESS_KEY_ID: 'nobody', AWS_SECRET_ACCESS_KEY: 'wrong-secret-value' };
    const cli = ['tsx', 'operator/weights/loader.ts', 'load', '--from', 's3://weights/llama-8b', '--to', to];
    const failed = await run('npx', [...cli, '--endpoint', s3.endpoint], { env }).then(
      () => null,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).not.toContain('wrong-secret-value');
    expect(
      await readdir(join(root, 'bad', 'models')).then((l) => l.filter((f) => !f.startsWith('.partial-'))),
    ).toEqual([]);
  });

  it("from the Hugging Face Hub's HTTP API (a local server of its shape: the real Hub is not reachable here): every listed file at the revision, the token as a bearer", async () => {
    const seen: { url: string; auth: string | undefined }[] = [];
    const hub: Server = createServer((req, res) => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization });
      const listing = '/api/models/acme/tiny/revision/v1.0';
      if (req.url === listing) {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ siblings: Object.keys(files).map((rfilename) => ({ rfilename })) }));
        return;
      }
      const prefix = '/acme/tiny/resolve/v1.0/';
      const name = decodeURIComponent((req.url ?? '').slice(prefix.length));
      if (req.url?.startsWith(prefix) && name in files) res.end(files[name]);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => hub.listen(0, '127.0.0.1', r));
    try {
      const to = join(root, 'hub', 'models', 'tiny-u4');
      const hubUrl = `http://127.0.0.1:${(hub.address() as AddressInfo).port}`;
      const loaded = await loadWeights({
        from: 'hf:acme/tiny@v1.0',
        to,
        hubUrl,
        env: { HF_TOKEN: 'hf_test_token' },
      });
      expect(loaded).toMatchObject({ files: 5, skipped: false });
      await same(to);
      expect(seen.every((s) => s.auth === 'Bearer hf_test_token')).toBe(true);
      expect(seen.map((s) => s.url)).toContain('/acme/tiny/resolve/v1.0/nested/generation_config.json');
      // A revision the Hub does not know fails the load.
      await expect(
        loadWeights({ from: 'hf:acme/tiny@nope', to: join(root, 'hub', 'models', 'x'), hubUrl }),
      ).rejects.toThrow(/the Hub answered 404 for acme\/tiny@nope/);
    } finally {
      await new Promise((r) => hub.close(r));
    }
  });
});

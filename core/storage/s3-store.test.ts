// The S3 store against two real S3-compatible servers, Versity Gateway and MinIO
// (test/helpers/s3-server.ts): the same contract as the filesystem store, signed URLs included
// (S3 presigned, checked by the server itself), and what only S3 has.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type S3Server, startS3, type TestS3 } from '../../test/helpers/s3-server.ts';
import { S3Store, type S3StoreOptions } from './s3-store.ts';
import { storeContract } from './store-contract.ts';

function storeOn(s3: TestS3, change: Partial<S3StoreOptions> = {}): S3Store {
  return new S3Store({
    bucket: s3.bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    ...change,
  });
}

describe.each<S3Server>(['versitygw', 'minio'])('S3 store on %s', (server) => {
  let s3: TestS3;
  let store: S3Store;
  beforeAll(async () => {
    s3 = await startS3(server);
    store = storeOn(s3);
  });
  afterAll(async () => {
    store?.close();
    await s3?.stop();
  });

  storeContract(`s3 (${server})`, () => ({ store, origin: 'unused' }));

  it('says clearly when the bucket does not exist or the key is refused', async () => {
    await expect(store.check()).resolves.toBeUndefined();
    const missing = storeOn(s3, { bucket: 'no-such-bucket' });
    await expect(missing.check()).rejects.toThrow(/no-such-bucket.*does not exist/);
    // A bucket gone after start is an error, not a store where every object has expired.
    await expect(missing.get('t/a.png')).rejects.toMatchObject({ name: 'NoSuchBucket' });
    const wrong = storeOn(s3, {
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: 'wrong' },
    });
    await expect(wrong.check()).rejects.toThrow(/not usable/);
    missing.close();
    wrong.close();
  });

  it('a prefix keeps one install’s objects apart from another’s in the same bucket', async () => {
    const a = storeOn(s3, { prefix: 'install-a/' });
    await a.put('t/p.png', Buffer.from('a'), 'image/png');
    expect(await store.get('t/p.png')).toBeNull();
    expect(await store.get('install-a/t/p.png')).not.toBeNull();
    a.close();
  });

  it('a stream of unknown length larger than one part goes up whole (multipart) and comes back byte for byte', async () => {
    const chunk = Buffer.alloc(1 << 20);
    const sent = createHash('sha256');
    async function* video() {
      for (let i = 0; i < 12; i++) {
        chunk.fill(i);
        sent.update(chunk);
        yield Buffer.from(chunk);
      }
    }
    await store.put('t/big.mp4', Readable.from(video()), 'video/mp4');
    const got = (await store.get('t/big.mp4'))!;
    expect(got.size).toBe(12 << 20);
    const back = createHash('sha256');
    for await (const c of got.body) back.update(c as Buffer);
    expect(back.digest('hex')).toBe(sent.digest('hex'));
  });
});

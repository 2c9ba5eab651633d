// The S3 store against a real S3-compatible server (Versity Gateway, test/helpers/s3-server.ts):
// the same contract as the filesystem store, signed URLs included (S3 presigned, checked by the
// server itself).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3, type TestS3 } from '../../test/helpers/s3-server.ts';
import { S3Store } from './s3-store.ts';
import { storeContract } from './store-contract.ts';

let s3: TestS3;
let store: S3Store;
beforeAll(async () => {
  s3 = await startS3();
  store = new S3Store({
    bucket: s3.bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
});
afterAll(async () => {
  store?.close();
  await s3?.stop();
});

storeContract('s3', () => ({ store, origin: 'unused' }));

describe('S3 store', () => {
  it('says clearly when the bucket does not exist or the key is refused', async () => {
    await expect(store.check()).resolves.toBeUndefined();
    const missing = new S3Store({
      bucket: 'no-such-bucket',
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await expect(missing.check()).rejects.toThrow(/no-such-bucket.*does not exist/);
    // A bucket gone after start is an error, not a store where every object has expired.
    await expect(missing.get('t/a.png')).rejects.toMatchObject({ name: 'NoSuchBucket' });
    const wrong = new S3Store({
      bucket: s3.bucket,
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: 'wrong' },
    });
    await expect(wrong.check()).rejects.toThrow(/not usable/);
    missing.close();
    wrong.close();
  });

  it('a prefix keeps one install’s objects apart from another’s in the same bucket', async () => {
    const a = new S3Store({
      bucket: s3.bucket,
      region: s3.region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      prefix: 'install-a/',
    });
    await a.put('t/p.png', Buffer.from('a'), 'image/png');
    expect(await store.get('t/p.png')).toBeNull();
    expect(await store.get('install-a/t/p.png')).not.toBeNull();
    a.close();
  });
});

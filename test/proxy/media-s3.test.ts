// Media through the proxy with the S3 store (MEDIA_STORE=s3) against a real S3-compatible server:
// image links and the video content redirect are S3 presigned URLs that work without an API key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/index.ts';
import { startS3, type TestS3 } from '../helpers/s3-server.ts';
import { type Harness, imageModel, startHarness, videoModel } from './harness.ts';

let s3: TestS3;
let h: Harness;
beforeAll(async () => {
  s3 = await startS3();
  h = await startHarness(
    {
      MEDIA_STORE: 's3',
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_ACCESS_KEY_ID: s3.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      S3_PREFIX: 'mp/',
      VIDEO_POLL_MS: '40',
    },
    {
      entries: (endpoints) => [
        imageModel('Img/S3', endpoints, { perImage: '0.01' }),
        videoModel('Vid/S3', endpoints, { perSecond: '0.01' }),
      ],
    },
  );
  for (const s of h.sims) s.setOptions({ videoQueueMs: 20, videoMsPerSecond: 30 });
});
afterAll(async () => {
  await h?.stop();
  await s3?.stop();
});

describe('media on S3', () => {
  it('IMG-1 an image url is an S3 presigned link that needs no key', async () => {
    const r = await h.client().images.generate({ model: 'Img/S3', prompt: 'a fox' });
    const url = r.data![0]!.url!;
    expect(url.startsWith(`${s3.endpoint}/${s3.bucket}/mp/images/`)).toBe(true);
    expect(url).toContain('X-Amz-Signature=');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(
      Buffer.from(await res.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
  });

  it('VID-1 a finished video redirects to its presigned MP4', async () => {
    const client = h.client();
    let v = await client.videos.create({ model: 'Vid/S3', prompt: 'a boat', seconds: '4' });
    for (let i = 0; i < 400 && (v.status === 'queued' || v.status === 'in_progress'); i++) {
      await new Promise((r) => setTimeout(r, 25));
      v = await client.videos.retrieve(v.id);
    }
    expect(v.status).toBe('completed');
    const redirect = await fetch(`${h.baseURL}/videos/${v.id}/content`, {
      headers: { authorization: `Bearer ${h.secret}` },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    const mp4 = await fetch(redirect.headers.get('location')!);
    expect(mp4.status).toBe(200);
    expect(
      Buffer.from(await mp4.arrayBuffer())
        .subarray(4, 8)
        .toString(),
    ).toBe('ftyp');
  });

  it('MEDIA_STORE=s3 without a bucket, or with half the keys, stops the process with a message naming it', () => {
    const base = { MODELPLANE_KEK: '0'.repeat(64) };
    expect(() => loadConfig({ ...base, MEDIA_STORE: 's3' })).toThrow(
      /S3_BUCKET: required when MEDIA_STORE=s3/,
    );
    expect(() => loadConfig({ ...base, MEDIA_STORE: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'x' })).toThrow(
      /S3_SECRET_ACCESS_KEY/,
    );
  });
});

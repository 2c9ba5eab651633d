import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

const KEK = { MODELPLANE_KEK: 'ab'.repeat(32) };

describe('configuration: media storage', () => {
  it('defaults to the filesystem store under .data/media', () => {
    const c = loadConfig(KEK);
    expect(c.MEDIA_STORE).toBe('fs');
    expect(c.MEDIA_DIR).toBe('.data/media');
    expect(c.S3_REGION).toBe('us-east-1');
    expect(c.S3_FORCE_PATH_STYLE).toBeUndefined(); // the factory decides from S3_ENDPOINT
  });

  it('an S3 store with a bucket and no keys uses the SDK default chain', () => {
    const c = loadConfig({ ...KEK, MEDIA_STORE: 's3', S3_BUCKET: 'media' });
    expect(c.S3_BUCKET).toBe('media');
    expect(c.S3_ACCESS_KEY_ID).toBeUndefined();
  });

  it.each([
    ['s3 with no bucket', { MEDIA_STORE: 's3' }, /S3_BUCKET: required when MEDIA_STORE=s3/],
    ['one key without the other', { S3_ACCESS_KEY_ID: 'id' }, /S3_SECRET_ACCESS_KEY: set both/],
    ['an endpoint that is not a URL', { S3_ENDPOINT: 'minio:9000' }, /S3_ENDPOINT/],
    ['an unknown store', { MEDIA_STORE: 'gcs' }, /MEDIA_STORE/],
    ['a path style that is not a boolean', { S3_FORCE_PATH_STYLE: 'yes' }, /S3_FORCE_PATH_STYLE/],
  ])('refuses %s, naming the variable', (_, env, message) => {
    expect(() => loadConfig({ ...KEK, ...env })).toThrow(message);
  });

  it('reads S3_FORCE_PATH_STYLE as a boolean', () => {
    expect(loadConfig({ ...KEK, S3_FORCE_PATH_STYLE: 'false' }).S3_FORCE_PATH_STYLE).toBe(false);
    expect(loadConfig({ ...KEK, S3_FORCE_PATH_STYLE: '1' }).S3_FORCE_PATH_STYLE).toBe(true);
  });
});

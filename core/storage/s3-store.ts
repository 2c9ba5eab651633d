// The S3-compatible store (the production option: many proxy replicas share one bucket), through
// the official AWS SDK. Streams of unknown length go up as multipart uploads (lib-storage), so a
// video is never held whole; links are S3 presigned GETs (SigV4), which the bucket itself checks.

import type { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { checkKey, type ObjectStore, type StoredObject } from './store.ts';

export interface S3StoreOptions {
  bucket: string;
  region: string;
  /** An S3-compatible endpoint (MinIO, Versity, Ceph…); unset: AWS S3. */
  endpoint?: string | undefined;
  /** Path-style URLs (`<endpoint>/<bucket>/<key>`), as most S3-compatible servers need. */
  forcePathStyle: boolean;
  /** Unset: the SDK's default chain (environment, IAM role, …). */
  credentials?: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** Prefix under which every key is kept (several installs may share a bucket). */
  prefix?: string;
}

/** S3 allows presigned URLs of up to seven days. */
const MAX_PRESIGN_S = 7 * 24 * 3600;

export class S3Store implements ObjectStore {
  private readonly client: S3Client;
  private readonly prefix: string;

  constructor(private readonly o: S3StoreOptions) {
    this.client = new S3Client({
      region: o.region,
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
      forcePathStyle: o.forcePathStyle,
      ...(o.credentials ? { credentials: o.credentials } : {}),
    });
    this.prefix = o.prefix ?? '';
  }

  /** Fails with a clear message when the bucket is missing or the credentials are refused. */
  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.o.bucket }));
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      throw new Error(
        `S3 bucket '${this.o.bucket}' at ${this.o.endpoint ?? 'AWS'} is not usable` +
          (status === 404 ? ': it does not exist' : status === 403 ? ': access denied' : `: ${String(err)}`),
        { cause: err },
      );
    }
  }

  private key(key: string): string {
    return this.prefix + checkKey(key);
  }

  async put(key: string, body: Buffer | Readable, contentType: string): Promise<void> {
    const Key = this.key(key);
    await new Upload({
      client: this.client,
      params: { Bucket: this.o.bucket, Key, Body: body, ContentType: contentType },
    }).done();
  }

  async get(key: string): Promise<StoredObject | null> {
    const Key = this.key(key);
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.o.bucket, Key }));
      return {
        body: r.Body as Readable,
        contentType: r.ContentType ?? 'application/octet-stream',
        size: r.ContentLength ?? 0,
      };
    } catch (err) {
      // Only a missing object is null: a missing bucket (also a 404) is a broken store, and must
      // not pass for media that has expired.
      const name = (err as { name?: string }).name;
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (name === 'NoSuchKey' || (status === 404 && name !== 'NoSuchBucket')) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.o.bucket, Key: this.key(key) }));
  }

  async signedUrl(key: string, expiresAtMs: number, _origin: string): Promise<string> {
    const expiresIn = Math.min(MAX_PRESIGN_S, Math.max(1, Math.ceil((expiresAtMs - Date.now()) / 1000)));
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.o.bucket, Key: this.key(key) }), {
      expiresIn,
    });
  }

  close(): void {
    this.client.destroy();
  }
}

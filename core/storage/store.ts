// Object storage for generated media (images, video MP4s) behind one small interface, with two
// implementations: the local filesystem (./fs-store.ts, the default and what `make dev` uses) and
// S3-compatible storage (./s3-store.ts, the production option: many proxy replicas share one
// bucket). Results reach clients through signed, expiring URLs that need no API key.
import type { Readable } from 'node:stream';

export interface StoredObject {
  body: Readable;
  contentType: string;
  size: number;
}

export interface ObjectStore {
  /** Writes (or replaces) an object. Keys are `[a-z0-9/._-]` paths without `..` (checkKey). */
  put(key: string, body: Buffer | Readable, contentType: string): Promise<void>;
  /** The object, or null when there is none. */
  get(key: string): Promise<StoredObject | null>;
  /** Deletes an object; deleting one that is not there is not an error. */
  delete(key: string): Promise<void>;
  /**
   * A URL a client can fetch the object from without an API key until `expiresAtMs`: the proxy's
   * own `/files/…` route signed with HMAC under `origin` (filesystem: the proxy's public origin,
   * e.g. `https://api.example.com`), or an S3 presigned URL (origin unused).
   */
  signedUrl(key: string, expiresAtMs: number, origin: string): Promise<string>;
}

const KEY = /^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/;

/** Refuses a key that could leave the store (`..`, absolute paths, odd characters). */
export function checkKey(key: string): string {
  if (key.length > 512 || !KEY.test(key) || key.split('/').some((p) => p === '.' || p === '..'))
    throw new RangeError(`invalid object key: ${JSON.stringify(key)}`);
  return key;
}

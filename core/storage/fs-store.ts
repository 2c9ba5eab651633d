// The filesystem store: objects are files under one root folder (the data folder by default),
// written to a temporary name and renamed into place so a reader never sees half a file. URLs
// are the proxy's own /files route, signed (./url-signer.ts).

import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkKey, type ObjectStore, type StoredObject } from './store.ts';
import type { UrlSigner } from './url-signer.ts';

const TYPES: Record<string, string> = {
  png: 'image/png',
  mp4: 'video/mp4',
  jpg: 'image/jpeg',
  webp: 'image/webp',
};

export class FsStore implements ObjectStore {
  private readonly root: string;

  constructor(
    root: string,
    private readonly signer: UrlSigner,
  ) {
    this.root = resolve(root);
  }

  /** The file of a key, never outside the root (checkKey refuses `..`; this is the second lock). */
  private path(key: string): string {
    const p = resolve(this.root, checkKey(key));
    if (!p.startsWith(this.root + sep)) throw new RangeError(`invalid object key: ${JSON.stringify(key)}`);
    return p;
  }

  async put(key: string, body: Buffer | Readable, _contentType: string): Promise<void> {
    const file = this.path(key);
    await mkdir(dirname(file), { recursive: true });
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      if (Buffer.isBuffer(body)) await writeFile(tmp, body);
      else await pipeline(body, createWriteStream(tmp));
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async get(key: string): Promise<StoredObject | null> {
    const file = this.path(key);
    try {
      const s = await stat(file);
      if (!s.isFile()) return null;
      const ext = key.slice(key.lastIndexOf('.') + 1);
      return {
        body: createReadStream(file),
        contentType: TYPES[ext] ?? 'application/octet-stream',
        size: s.size,
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  async signedUrl(key: string, expiresAtMs: number, origin: string): Promise<string> {
    checkKey(key);
    return `${origin.replace(/\/$/, '')}/files/${key}?${this.signer.query(key, expiresAtMs)}`;
  }
}

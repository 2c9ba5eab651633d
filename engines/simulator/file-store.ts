// Generated files (images, video thumbnails) served at GET /files/<id>.<ext>. Bounded: the oldest
// entries are dropped past the limit, like expiring signed URLs.

import { randomBytes } from 'node:crypto';

export interface StoredFile {
  data: Buffer;
  contentType: string;
}

export class FileStore {
  private readonly files = new Map<string, StoredFile>();

  constructor(private readonly limit = 512) {}

  put(data: Buffer, contentType: string, ext: string): string {
    const name = `${randomBytes(12).toString('hex')}.${ext}`;
    this.files.set(name, { data, contentType });
    while (this.files.size > this.limit) {
      const oldest = this.files.keys().next().value;
      if (oldest === undefined) break;
      this.files.delete(oldest);
    }
    return name;
  }

  get(name: string): StoredFile | undefined {
    return this.files.get(name);
  }
}

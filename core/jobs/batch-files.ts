// OpenAI's Files for batches (`purpose` batch: a JSONL input; batch_output: what a batch wrote):
// the bytes in the media store (core/storage: local disk or S3, shared by every replica), the
// record in Redis listed per account with cursors (./listed-records.ts). Deleting a file removes
// both; a batch that is running keeps its own copy of the lines it read, so it is not disturbed.
import type { Readable } from 'node:stream';
import { newLongId } from '../ids.ts';
import type { Redis } from '../redis/client.ts';
import type { ObjectStore } from '../storage/store.ts';
import { ListedRecords, type ListPage, type RecordFields } from './listed-records.ts';

export const filePurposes = ['batch', 'batch_output'] as const;
export type FilePurpose = (typeof filePurposes)[number];

export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
  status_details: null;
  expires_at: number | null;
}

export const newFileId = (): string => `file-${newLongId('x').slice(2)}`;

/** The store key of an account's file (store keys are lowercase paths). */
const storeKey = (accountId: string, id: string) =>
  `batch-files/${accountId.toLowerCase().replace(/[^a-z0-9._-]/g, '-')}/${id.toLowerCase()}.jsonl`;

export function fileObject(r: RecordFields): FileObject {
  return {
    id: r.id!,
    object: 'file',
    bytes: Number(r.bytes),
    created_at: Number(r.created_at),
    filename: r.filename ?? '',
    purpose: r.purpose ?? 'batch',
    status: 'processed',
    status_details: null,
    expires_at: r.expires_at ? Number(r.expires_at) : null,
  };
}

export class BatchFiles {
  private readonly records: ListedRecords;

  constructor(
    redis: Redis,
    private readonly store: ObjectStore,
  ) {
    this.records = new ListedRecords(redis, 'bfile');
  }

  /** Stores `body` (`bytes` long) as the account's file `id` (a new id unless given: a batch's output names its own). */
  async create(
    accountId: string,
    f: { filename: string; purpose: FilePurpose; bytes: number; body: Buffer | Readable; id?: string },
  ): Promise<FileObject> {
    const id = f.id ?? newFileId();
    const key = storeKey(accountId, id);
    await this.store.put(key, f.body, 'application/jsonl');
    const fields = {
      id,
      bytes: f.bytes,
      created_at: Math.floor(Date.now() / 1000),
      filename: f.filename,
      purpose: f.purpose,
      store_key: key,
    };
    await this.records.add(accountId, id, fields);
    return fileObject(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])));
  }

  async get(accountId: string, id: string): Promise<FileObject | null> {
    const r = await this.records.get(accountId, id);
    return r === null ? null : fileObject(r);
  }

  /** The file's bytes, or null when the account has no such file (or its bytes are gone). */
  async content(accountId: string, id: string): Promise<{ body: Readable; size: number } | null> {
    const r = await this.records.get(accountId, id);
    if (r === null) return null;
    const object = await this.store.get(r.store_key!);
    return object === null ? null : { body: object.body, size: object.size };
  }

  /** The whole file as a Buffer (a batch's input, read once by its runner). */
  async read(accountId: string, id: string): Promise<Buffer | null> {
    const c = await this.content(accountId, id);
    if (c === null) return null;
    const parts: Buffer[] = [];
    for await (const chunk of c.body) parts.push(chunk as Buffer);
    return Buffer.concat(parts);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const r = await this.records.get(accountId, id);
    if (r === null) return false;
    await this.records.remove(accountId, id);
    await this.store.delete(r.store_key!);
    return true;
  }

  list(
    accountId: string,
    o: { after?: string; limit: number; order: 'asc' | 'desc'; purpose?: string },
  ): Promise<ListPage | null> {
    const { purpose } = o;
    return this.records.list(accountId, {
      after: o.after,
      limit: o.limit,
      order: o.order,
      ...(purpose === undefined ? {} : { filter: (r: RecordFields) => r.purpose === purpose }),
    });
  }
}

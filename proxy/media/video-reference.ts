// A video's input_reference (VID-*, image-to-video): which uploads are images, and where the one
// kept for a job lives in the store — `videos/<job id>-ref<ext>`, beside the job's MP4
// (./video-worker.ts), so the engine's worker finds it by the job and deleting the job deletes it.
import { createReadStream } from 'node:fs';
import { extname } from 'node:path';
import type { ObjectStore } from '../../core/storage/index.ts';
import type { SpooledFile } from './upload-form.ts';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);
const IMAGE_EXTENSIONS: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
};

/**
 * The image type of an input_reference: its Content-Type, or where that says nothing (the
 * official TypeScript SDK sends a file stream as application/octet-stream) its file name's
 * extension, as OpenAI's API reads it; null when neither names an image.
 */
export function referenceType(part: { filename: string; mimetype: string }): string | null {
  if (IMAGE_TYPES.has(part.mimetype)) return part.mimetype;
  if (part.mimetype !== '' && part.mimetype !== 'application/octet-stream') return null;
  return IMAGE_EXTENSIONS[extname(part.filename || '').toLowerCase()] ?? null;
}

/** The store key of job `id`'s reference, its extension taken from the upload's file name. */
export function referenceKey(id: string, file: { filename: string }): string {
  const ext = extname(file.filename || '')
    .toLowerCase()
    .replace(/[^.a-z0-9]/g, '');
  return `videos/${id}-ref${ext || '.png'}`;
}

/** Streams a spooled (and already checked: referenceType not null) reference into the store at `key`. */
export function storeReference(store: ObjectStore, key: string, file: SpooledFile): Promise<void> {
  return store.put(key, createReadStream(file.path), referenceType(file)!);
}

// An uploaded batch input (../routes/batch-files.ts), from its spooled file: its lines counted
// (the upload's limit) and its bytes streamed into the media store.
import { createReadStream } from 'node:fs';
import type { BatchFiles, FileObject } from '../../core/jobs/batch-files.ts';
import type { SpooledFile } from '../media/upload-form.ts';

/** Lines of a JSONL file (a last line without its newline counts; blank lines do not). */
export async function countLines(path: string): Promise<number> {
  let lines = 0;
  let open = false;
  for await (const chunk of createReadStream(path)) {
    for (const byte of chunk as Buffer) {
      if (byte === 0x0a) {
        if (open) lines++;
        open = false;
      } else if (byte !== 0x0d && byte !== 0x20) open = true;
    }
  }
  return open ? lines + 1 : lines;
}

export function storeInputFile(files: BatchFiles, accountId: string, file: SpooledFile): Promise<FileObject> {
  return files.create(accountId, {
    filename: file.filename,
    purpose: 'batch',
    bytes: file.size,
    body: createReadStream(file.path),
  });
}

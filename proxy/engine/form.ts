// A multipart form as a streamed request body: the form's files (Blobs, e.g. over spooled files
// from fs.openAsBlob) are read as the body is sent, never all in memory.
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';

export function formBody(fd: FormData): { stream: Readable; contentType: string } {
  const res = new Response(fd);
  const contentType = res.headers.get('content-type') ?? 'multipart/form-data';
  return { stream: Readable.fromWeb(res.body! as ReadableStream), contentType };
}

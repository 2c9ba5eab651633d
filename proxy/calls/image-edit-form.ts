// The engine's image-edit request: a multipart form streamed from the spooled upload files. Each
// engine attempt streams a fresh form (Node streams, 1 MB reads: a WHATWG FormData body cost the
// proxy about three times the CPU per uploaded byte). The engine is always asked for b64_json.
import { createReadStream } from 'node:fs';
import { PassThrough } from 'node:stream';
import FormDataStream from 'form-data';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import type { SpooledFile } from '../media/upload-form.ts';

export function engineEditForm(
  entry: CatalogueEntry,
  fields: { prompt: string; n: number; size?: string | undefined; quality?: string | undefined },
  files: readonly SpooledFile[],
): { stream: PassThrough; contentType: string } {
  const multiple = files.filter((f) => f.field !== 'mask').length > 1;
  const fd = new FormDataStream();
  fd.append('model', entry.servedName ?? entry.id);
  fd.append('prompt', fields.prompt);
  fd.append('n', String(fields.n));
  fd.append('response_format', 'b64_json');
  if (fields.size) fd.append('size', fields.size);
  if (fields.quality) fd.append('quality', fields.quality);
  for (const f of files) {
    fd.append(
      f.field === 'mask' ? 'mask' : multiple ? 'image[]' : 'image',
      createReadStream(f.path, { highWaterMark: 1 << 20 }),
      { filename: f.filename || 'image.png', contentType: f.mimetype, knownLength: f.size },
    );
  }
  const stream = new PassThrough({ highWaterMark: 1 << 20 });
  fd.on('error', (err) => stream.destroy(err));
  fd.pipe(stream);
  return { stream, contentType: fd.getHeaders()['content-type'] as string };
}

// A small multipart/form-data parser over a fully buffered body (RFC 7578). Enough for image edits
// and image-to-video: named text fields and file parts with their filename and content type.

import type { ReceivedForm } from './context.ts';
import { badRequest } from './http.ts';

export interface MultipartPart {
  name: string;
  filename: string | null;
  contentType: string | null;
  data: Buffer;
}

export function multipartBoundary(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data/i.test(contentType)) return null;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}

export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: MultipartPart[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw badRequest('multipart body has no boundary delimiter');
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) break; // closing "--"
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) throw badRequest('malformed multipart part headers');
    const headers = body.subarray(pos, headerEnd).toString('utf8').split('\r\n');
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4);
    if (next < 0) throw badRequest('multipart body is not terminated');
    let name: string | null = null;
    let filename: string | null = null;
    let contentType: string | null = null;
    for (const line of headers) {
      const [key, ...rest] = line.split(':');
      const value = rest.join(':').trim();
      if (key?.toLowerCase() === 'content-disposition') {
        name = /\bname="([^"]*)"/i.exec(value)?.[1] ?? null;
        filename = /\bfilename="([^"]*)"/i.exec(value)?.[1] ?? null;
      } else if (key?.toLowerCase() === 'content-type') {
        contentType = value;
      }
    }
    if (name === null) throw badRequest('multipart part without a name');
    parts.push({ name, filename, contentType, data: body.subarray(headerEnd + 4, next) });
    pos = next + 2;
  }
  return parts;
}

/** Text fields of a multipart body as a plain object; repeated names keep the last value. */
export function multipartFields(parts: MultipartPart[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const p of parts) if (p.filename === null) fields[p.name] = p.data.toString('utf8');
  return fields;
}

/** The parts as a request log keeps them: fields, and files by name and size (never their bytes). */
export function formSummary(parts: MultipartPart[]): ReceivedForm {
  return {
    fields: multipartFields(parts),
    files: parts
      .filter((p) => p.filename !== null)
      .map((p) => ({ name: p.name, filename: p.filename, contentType: p.contentType, bytes: p.data.length })),
  };
}

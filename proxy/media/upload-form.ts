// A multipart upload read as it streams in (image edits, a video's input_reference): fields kept
// in memory (each bounded), files written to a spool folder as they arrive, never whole in memory.
// Every bound is decided on the chunk that passes it, and so are the route's own checks (a model
// that cannot edit, a file field it does not take), run as each part arrives: the reading stops
// there, the spooled files are deleted, and the 400 goes out at once with `Connection: close`;
// then the write side is closed and a bounded amount drained before the socket is (RFC 9112 §9.6,
// ./lingering-close.ts), so a client still sending reads the 400, not a reset — and an endless
// body (a file, a field, a part's headers, the whole body) is never read to its end.
//
// busboy parses; this module owns the request stream (busboy's own limits only truncate: past
// them it goes on reading, and discarding, up to the end of the part).
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Busboy, type BusboyFileStream, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalidRequest } from '../../core/errors.ts';
import { ClientClosedError } from '../../http/client-closed.ts';
import { type FormFields, formFields, takeField } from './form-fields.ts';
import { lingerAfterAnswer } from './lingering-close.ts';

export interface UploadLimits {
  /** Bytes of one file. */
  fileBytes: number;
  /** File parts in all. */
  files: number;
  /** Field parts in all. */
  fields: number;
  /** Bytes of one field's value. */
  fieldBytes: number;
  /** Bytes of the whole body. */
  totalBytes: number;
}

export interface SpooledFile {
  field: string;
  filename: string;
  mimetype: string;
  path: string;
  /** Bytes written so far; the whole file's once the form is read. */
  size: number;
}

export interface UploadForm {
  fields: FormFields;
  files: SpooledFile[];
}

export interface UploadChecks {
  /** A field as it arrives; throwing refuses the upload at once with that error. */
  field?(name: string, value: string, form: UploadForm): void;
  /** A file part as it begins, before any of its bytes are kept; throwing refuses the upload. */
  file?(field: string, part: { filename: string; mimetype: string }, form: UploadForm): void;
}

/**
 * What a part's headers and boundary may add to a field before its bytes count as too many: the
 * field's own limit is only known to busboy, which reports the field at its end.
 */
const PART_HEAD_BYTES = 64 * 1024;

/** Fewer, larger writes to the spool and fewer pauses: a socket hands over at most 64 KB a read. */
const SPOOL_HWM = 1 << 20;

/** A limit as the client reads it: 20 MB, 128 KB, 100 bytes. */
export function sizeText(n: number): string {
  if (n >= 1024 * 1024) return `${Math.round(n / 1024 / 1024)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} bytes`;
}

export function isMultipartForm(request: FastifyRequest): boolean {
  return /^multipart\/form-data\b/i.test(request.headers['content-type'] ?? '');
}

/**
 * For the scope of a route that reads uploads: multipart bodies are left unread for the route
 * (fastify's bodyLimit cannot bound them; readUploadForm does), and any answer sent before its
 * body was read to the end (a 401, an unknown model) closes the connection: Node would otherwise
 * read, and discard, the rest of the body to keep the connection alive — all of an endless one.
 */
export function acceptUploads(app: FastifyInstance): void {
  app.addContentTypeParser('multipart/form-data', (_request, _payload, done) => done(null, undefined));
  app.addHook('onSend', async (request, reply) => {
    if (request.raw.complete) return;
    reply.header('connection', 'close');
    // Close the write side first and drain a bounded amount, so a client still sending reads
    // the answer instead of a connection reset (./lingering-close.ts).
    lingerAfterAnswer(request.raw);
  });
}

/**
 * Reads the form of `request` into memory (fields) and `dir` (files, named 0, 1, …). Rejects with
 * the 400 naming the bound passed, or the route's check's error, having stopped reading and
 * deleted `dir`; on success the caller deletes `dir` when done with the files.
 */
export async function readUploadForm(
  request: FastifyRequest,
  reply: FastifyReply,
  o: { dir: string; limits: UploadLimits; checks?: UploadChecks },
): Promise<UploadForm> {
  await mkdir(o.dir, { recursive: true });
  const reader = new UploadReader(request, reply, o.dir, o.limits, o.checks ?? {});
  try {
    return await reader.read();
  } catch (err) {
    // A spool file still being opened would otherwise appear after the folder is gone.
    await reader.closed();
    await rm(o.dir, { recursive: true, force: true });
    throw err;
  }
}

class UploadReader {
  private readonly form: UploadForm = { fields: formFields(), files: [] };
  /** busboy's stream of each file, in order: how many bytes it has taken. */
  private readonly fileStreams: BusboyFileStream[] = [];
  private readonly spools: WriteStream[] = [];
  private readonly written: Promise<void>[] = [];
  private total = 0;
  /** Bytes that were not file bytes up to the last part boundary seen (see `check`). */
  private mark = 0;
  private done = false;
  private resolve!: (form: UploadForm) => void;
  private reject!: (err: unknown) => void;
  private bb: BusboyInstance | null = null;
  private readonly onData = (chunk: Buffer) => this.take(chunk);
  private readonly onEnd = () => this.bb?.end();
  private readonly onAborted = () => this.fail(new ClientClosedError());

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly dir: string,
    private readonly limits: UploadLimits,
    private readonly checks: UploadChecks,
  ) {}

  read(): Promise<UploadForm> {
    const promise = new Promise<UploadForm>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    const raw = this.request.raw;
    try {
      this.bb = Busboy({
        headers: raw.headers as BusboyHeaders,
        // No chunk waits unparsed in busboy's own buffer (see take): every 'drain' is signalled.
        highWaterMark: 1,
        fileHwm: SPOOL_HWM,
        limits: {
          fileSize: this.limits.fileBytes,
          files: this.limits.files,
          fields: this.limits.fields,
          fieldSize: this.limits.fieldBytes,
          parts: this.limits.files + this.limits.fields,
          headerPairs: 16,
        },
      });
    } catch (err) {
      // No boundary, or not multipart at all: the client's body, not our fault.
      this.fail(invalidRequest(`The multipart body could not be read: ${(err as Error).message}.`));
      return promise;
    }
    const bb = this.bb;
    bb.on('field', (name, value, _nameTruncated, truncated) => this.onField(name, value, truncated));
    bb.on('file', (name, file, filename, _encoding, mimetype) => this.onFile(name, file, filename, mimetype));
    bb.on('filesLimit', () => this.fail(invalidRequest(`At most ${this.limits.files} files may be sent.`)));
    bb.on('fieldsLimit', () =>
      this.fail(invalidRequest(`The form has more than ${this.limits.fields} fields.`)),
    );
    bb.on('partsLimit', () => this.fail(invalidRequest('The form has too many parts.')));
    bb.on('error', (err: Error) =>
      this.fail(invalidRequest(`The multipart body could not be read: ${err.message}.`)),
    );
    bb.on('drain', () => {
      if (!this.done) raw.resume();
    });
    bb.on('finish', () => {
      if (this.done) return;
      Promise.all(this.written).then(
        () => {
          if (this.done) return;
          this.done = true;
          this.detach();
          this.resolve(this.form);
        },
        (err: unknown) =>
          this.fail(new ApiError('server_error', 'The upload could not be kept.', { cause: err })),
      );
    });
    raw.on('data', this.onData);
    raw.on('end', this.onEnd);
    raw.on('aborted', this.onAborted);
    raw.on('error', this.onAborted);
    // The client may have gone before these listeners were attached (while the route awaited the
    // spool folder): 'aborted' has been and gone, and the body, discarded, would never end.
    if (raw.destroyed) {
      this.fail(new ClientClosedError());
      return promise;
    }
    raw.resume();
    return promise;
  }

  /** One chunk of the body: counted against the bounds before and after busboy has parsed it. */
  private take(chunk: Buffer): void {
    if (this.done) return;
    this.total += chunk.length;
    if (this.total > this.limits.totalBytes) {
      this.fail(invalidRequest(`The request body may be at most ${sizeText(this.limits.totalBytes)}.`));
      return;
    }
    // busboy parses a chunk as it is written: its events (a part begins, a file passes its
    // limit, a field ends and is checked) have all run when write returns. A chunk it could not
    // hand on (a spool file behind) is still pending then: no more are read until it drains, so
    // no byte ever waits in busboy's buffer, counted here but not yet parsed.
    const bb = this.bb!;
    bb.write(chunk);
    if (bb.writableLength > 0) this.request.raw.pause();
    if (!this.done) this.check();
  }

  /**
   * A field, a part's headers, the preamble: bytes that are not a file's must not run on past a
   * field's limit. busboy reports a field only at its end (and silently truncates it), so the
   * bytes between part boundaries that no file took are counted here.
   */
  private check(): void {
    if (this.nonFileBytes() - this.mark > this.limits.fieldBytes + PART_HEAD_BYTES)
      this.fail(
        invalidRequest(
          `A form field (or a part's headers) is longer than ${sizeText(this.limits.fieldBytes)}.`,
        ),
      );
  }

  private nonFileBytes(): number {
    let files = 0;
    for (const f of this.fileStreams) files += f.bytesRead;
    return this.total - files;
  }

  private onField(name: string, value: string, truncated: boolean): void {
    if (this.done) return;
    this.mark = this.nonFileBytes();
    if (truncated) {
      this.fail(
        invalidRequest(`The field '${name}' is longer than ${sizeText(this.limits.fieldBytes)}.`, name),
      );
      return;
    }
    try {
      takeField(this.form.fields, name, value);
      this.checks.field?.(name, value, this.form);
    } catch (err) {
      this.fail(err);
    }
  }

  private onFile(field: string, file: BusboyFileStream, filename: string, mimetype: string): void {
    if (this.done) {
      file.resume();
      return;
    }
    this.fileStreams.push(file);
    this.mark = this.nonFileBytes();
    try {
      this.checks.file?.(field, { filename, mimetype }, this.form);
    } catch (err) {
      this.fail(err);
      return;
    }
    const spooled: SpooledFile = {
      field,
      filename,
      mimetype,
      path: join(this.dir, String(this.form.files.length)),
      size: 0,
    };
    this.form.files.push(spooled);
    file.on('limit', () =>
      this.fail(
        invalidRequest(
          `Each file may be at most ${sizeText(this.limits.fileBytes)}: the one in '${field}' is larger.`,
          field,
        ),
      ),
    );
    const out = createWriteStream(spooled.path, { highWaterMark: SPOOL_HWM });
    this.spools.push(out);
    this.written.push(
      new Promise<void>((resolve, reject) => {
        out.on('error', reject);
        out.on('finish', resolve);
        file.on('error', reject);
        file.on('data', (chunk: Buffer) => {
          spooled.size += chunk.length;
          if (!out.write(chunk)) file.pause();
        });
        out.on('drain', () => file.resume());
        file.on('end', () => out.end());
      }),
    );
  }

  /** Stops reading at once: the answer (err) goes out and the connection closes after it. */
  private fail(err: unknown): void {
    if (this.done) return;
    this.done = true;
    this.detach();
    this.request.raw.pause();
    this.reply.header('connection', 'close');
    for (const s of this.spools) s.destroy();
    for (const f of this.fileStreams) f.destroy();
    for (const w of this.written) w.catch(() => {});
    this.reject(err);
  }

  /** Every spool file closed (after a failure: destroyed), so none appears after its folder is deleted. */
  async closed(): Promise<void> {
    await Promise.all(
      this.spools.map((s) => (s.closed ? undefined : new Promise<void>((r) => s.once('close', () => r())))),
    );
  }

  private detach(): void {
    const raw = this.request.raw;
    raw.off('data', this.onData);
    raw.off('end', this.onEnd);
    raw.off('aborted', this.onAborted);
    raw.off('error', this.onAborted);
  }
}

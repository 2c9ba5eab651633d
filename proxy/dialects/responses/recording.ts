// The stream translator of a background response (../../calls/background-responses.ts): the
// Responses translator as any stream has it, with every event it makes also recorded for replay,
// and the job's state written as the stream opens and ends. A cancelled job's stream ends with
// its output so far and the usage billed for it, as status cancelled.
import type { ApiError } from '../../../core/errors.ts';
import type { CallCost, TextUsage } from '../../usage.ts';
import type { FastFrame, StreamTranslator } from '../translator.ts';
import type { Echo } from './response.ts';
import { type FinishedResponse, ResponsesStream, ResponsesTranslator } from './stream.ts';

/** What a background stream tells its job. */
export interface JobSink {
  /** Events made, as SSE text (one or more whole blocks). */
  record(events: string): void;
  /** The stream opened: the job is in progress. */
  started(): void;
  /** The stream ended: its final response (completed, incomplete, failed or cancelled). */
  finished(response: FinishedResponse): void;
  /** Whether the job was cancelled (its call is ended for it). */
  cancelled(): boolean;
}

export class RecordingTranslator implements StreamTranslator {
  readonly ping = null;
  private readonly stream: ResponsesStream;
  private readonly inner: ResponsesTranslator;
  private last: FinishedResponse | null = null;

  constructor(
    echo: Echo,
    private readonly sink: JobSink,
  ) {
    this.stream = new ResponsesStream(echo);
    this.inner = new ResponsesTranslator(this.stream, (r) => {
      this.last = r;
    });
  }

  head(): string {
    const head = this.inner.head();
    this.sink.record(head);
    this.sink.started();
    return head;
  }

  fast(block: Buffer, out: Buffer[]): FastFrame | undefined {
    const from = out.length;
    const f = this.inner.fast(block, out);
    if (out.length > from) this.sink.record(Buffer.concat(out.slice(from)).toString());
    return f;
  }

  chunk(chunk: Record<string, unknown>, out: Buffer[]): void {
    const from = out.length;
    this.inner.chunk(chunk, out);
    if (out.length > from) this.sink.record(Buffer.concat(out.slice(from)).toString());
  }

  end(usage: TextUsage, cost: CallCost): Buffer {
    const bytes = this.inner.end(usage, cost);
    this.sink.record(bytes.toString());
    this.sink.finished(this.last!);
    return bytes;
  }

  error(err: ApiError, requestId: string, billed?: { usage: TextUsage; cost: CallCost }): Buffer {
    if (this.sink.cancelled()) {
      this.sink.finished(this.stream.cancelled(billed));
      return Buffer.alloc(0);
    }
    const bytes = this.inner.error(err, requestId, billed);
    this.sink.record(bytes.toString());
    this.sink.finished(this.last!);
    return bytes;
  }
}

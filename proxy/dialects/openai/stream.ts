// The chat-completions dialect's stream translator (../translator.ts, CHAT-2..4): engine frames
// pass through as they are, rewritten only to echo the canonical model and drop usage the client
// did not ask for (./chunks.ts); the usual frame is cut from the engine's bytes. The stream ends
// with [DONE], or an in-band error frame that the openai SDKs raise.
import type { ApiError } from '../../../core/errors.ts';
import { errorBody } from '../../../http/dialect.ts';
import { DONE_FRAME, dataFrame } from '../../engine/sse.ts';
import type { FastFrame, StreamTranslator } from '../translator.ts';
import { type ChunkView, clientChunk, type FrameView, frameView, relayFrame } from './chunks.ts';

export class ChatStream implements StreamTranslator {
  readonly ping = null;
  private readonly view: FrameView;

  /** `engineModel`: how the engine names the model in its frames. */
  constructor(view: ChunkView, engineModel: string) {
    this.view = frameView(view, engineModel);
  }

  head(): string {
    return '';
  }

  fast(block: Buffer, out: Buffer[]): FastFrame | undefined {
    const fast = relayFrame(block, this.view);
    if (fast === undefined) return undefined;
    if (fast.pieces !== null) for (const p of fast.pieces) out.push(p);
    // A frame in the usual shape always carries usage, so its content is never counted.
    return { usageAt: fast.usageAt, content: false };
  }

  chunk(chunk: Record<string, unknown>, out: Buffer[]): void {
    const json = clientChunk(chunk, this.view);
    if (json !== null) out.push(Buffer.from(dataFrame(json)));
  }

  end(): Buffer {
    return DONE_FRAME;
  }

  error(err: ApiError, requestId: string): Buffer {
    return Buffer.from(dataFrame(JSON.stringify(errorBody('openai', err, requestId))));
  }
}

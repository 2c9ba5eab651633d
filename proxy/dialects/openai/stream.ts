// The chat-completions dialect's stream translator (../translator.ts, CHAT-2..4): engine frames
// pass through as they are, rewritten only to echo the canonical model and drop usage the client
// did not ask for (../../engine/frames/chunks.ts); the usual frame is cut from the engine's bytes.
// The stream ends with [DONE], or an in-band error frame that the openai SDKs raise. The
// usage-only frame the client asked for (include_usage) is held back until the stream is billed,
// and sent just before [DONE] with usage.cost and usage.currency (../../usage.ts CallCost).
import type { ApiError } from '../../../core/errors.ts';
import { errorBody } from '../../../http/dialect.ts';
import {
  type ChunkView,
  clientChunk,
  type FrameView,
  frameView,
  relayFrame,
} from '../../engine/frames/index.ts';
import { DONE_FRAME, dataFrame } from '../../engine/sse.ts';
import type { CallCost, TextUsage } from '../../usage.ts';
import type { FastFrame, StreamTranslator } from '../translator.ts';

export class ChatStream implements StreamTranslator {
  readonly ping = null;
  private readonly view: FrameView;
  /** The usage-only frame's client JSON, held until the stream's bill is known. */
  private usageFrame: string | null = null;

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
    if (fast.usageOnly === true && fast.pieces !== null) {
      const frame = Buffer.concat(fast.pieces);
      this.usageFrame = frame.toString('utf8', 6, frame.length - 2); // inside `data: …\n\n`
    } else if (fast.pieces !== null) for (const p of fast.pieces) out.push(p);
    // Content is counted only in frames without usage (llama.cpp's): the usage of the others is exact.
    return { usageAt: fast.usageAt, content: fast.content === true, cached: fast.cached ?? null };
  }

  chunk(chunk: Record<string, unknown>, out: Buffer[]): void {
    const json = clientChunk(chunk, this.view);
    if (json === null) return;
    const choices = chunk.choices;
    if (Array.isArray(choices) && choices.length === 0 && chunk.usage != null) this.usageFrame = json;
    else out.push(Buffer.from(dataFrame(json)));
  }

  end(_usage: TextUsage, cost: CallCost): Buffer {
    if (this.usageFrame === null) return DONE_FRAME;
    // Parsed once per stream, the last frame only.
    const frame = JSON.parse(this.usageFrame) as { usage: Record<string, unknown> };
    frame.usage.cost = cost.cost;
    frame.usage.currency = cost.currency;
    return Buffer.concat([Buffer.from(dataFrame(JSON.stringify(frame))), DONE_FRAME]);
  }

  error(err: ApiError, requestId: string): Buffer {
    // A usage frame held back goes out as the engine sent it: the stream was not billed whole.
    const held = this.usageFrame === null ? '' : dataFrame(this.usageFrame);
    return Buffer.from(held + dataFrame(JSON.stringify(errorBody('openai', err, requestId))));
  }
}

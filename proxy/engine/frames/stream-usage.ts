// What a relayed stream is billed from, as its frames go by (../../calls/relay.ts): the engine's
// last reported usage, the frames that carried content (the proxy's count where the engine reports
// no usage), and the prompt's cached tokens as any frame reported them (./cached-tokens.ts).
// A frame the translator read from its bytes leaves its usage as bytes: only the stream's last
// one is ever parsed. Apart from the relay so that a test can feed it one stream both ways (read
// from the bytes, every frame parsed) and require the same usage.
import type { TextUsage } from '../../usage.ts';
import { cachedInFrame, withCachedPrompt } from './cached-tokens.ts';
import { estimatedUsage, hasContent, hasOutput, usageFromEngine, usageIn } from './reported-usage.ts';

/** What the relay learns from a frame a translator read from its bytes (../../dialects/translator.ts). */
export interface FastFrame {
  /** Where the frame's usage object starts in its block (for usageIn), or -1 when it has none. */
  usageAt: number;
  /** Whether it carried generated content (counts output when an engine reports no usage). */
  content: boolean;
  /** The prompt's cached tokens the frame reported outside usage (llama.cpp `timings.cache_n`). */
  cached?: number | null;
}

export class StreamUsage {
  private usage: TextUsage | null;
  // The last fast-path frame's usage, left as bytes.
  private usageBlock: Buffer | null = null;
  private usageAt = 0;
  private contentFrames = 0;
  /**
   * Whether a frame so far carried a generated token: content, a tool call or reasoning, or usage
   * that counts output (an engine's empty role frame does neither). The relay's time to first token.
   */
  generating = false;
  // Kept for a stream cut before its final usage frame, the only one where vLLM reports them.
  private cachedSeen: number | null;

  /** From the engine's first frame, parsed (to tell an error frame). */
  constructor(first: Record<string, unknown>) {
    this.usage = usageFromEngine(first.usage);
    this.cachedSeen = cachedInFrame(first);
  }

  /** The engine's usage as the stream's first frame gave it (for the dialect's head). */
  get head(): TextUsage | null {
    return this.usage;
  }

  /** A frame the translator read from its bytes (`block`). */
  read(block: Buffer, fast: FastFrame): void {
    if (fast.usageAt !== -1) {
      this.usageBlock = block;
      this.usageAt = fast.usageAt;
    }
    if (fast.content) this.contentFrames++;
    // A frame with usage is not read for content (its usage is exact): until the first token, its
    // usage says whether it carried one (parsed for the stream's first frames only).
    if (!this.generating)
      this.generating =
        fast.content ||
        (fast.usageAt !== -1 && (usageFromEngine(usageIn(block, fast.usageAt))?.outputTokens ?? 0) > 0);
    if (fast.cached != null) this.cachedSeen = fast.cached;
  }

  /** A frame parsed (never an error frame). */
  parsed(chunk: Record<string, unknown>): void {
    this.cachedSeen = cachedInFrame(chunk) ?? this.cachedSeen;
    const u = usageFromEngine(chunk.usage);
    if (u !== null) {
      this.usage = u;
      this.usageBlock = null;
    }
    if (hasContent(chunk)) this.contentFrames++;
    if (!this.generating) this.generating = hasOutput(chunk) || (u?.outputTokens ?? 0) > 0;
  }

  /** The usage billed were the stream cut now (progress; the last usage's bytes parsed, not kept). */
  sofar(promptBytes: number): TextUsage {
    const so = this.usageBlock === null ? null : usageFromEngine(usageIn(this.usageBlock, this.usageAt));
    return this.billed(so ?? this.usage, promptBytes);
  }

  /** The usage billed for the stream that ended, with its [DONE] or cut before it: the same rule. */
  ended(promptBytes: number): TextUsage {
    if (this.usageBlock !== null) {
      const last = usageIn(this.usageBlock, this.usageAt);
      this.usage = usageFromEngine(last) ?? this.usage;
      this.cachedSeen = cachedInFrame({ usage: last }) ?? this.cachedSeen;
      this.usageBlock = null;
    }
    return this.billed(this.usage, promptBytes);
  }

  private billed(usage: TextUsage | null, promptBytes: number): TextUsage {
    return withCachedPrompt(usage ?? estimatedUsage(promptBytes, this.contentFrames), this.cachedSeen);
  }
}

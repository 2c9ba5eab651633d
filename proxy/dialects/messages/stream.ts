// A chat-completions stream → Messages events, one engine chunk at a time. The event order is
// Anthropic's: message_start, then per content block content_block_start, content_block_delta…,
// content_block_stop, then message_delta (stop_reason and cumulative usage) and message_stop.
// Blocks are numbered apart from the engine's tool-call indexes: a text block then two tool calls
// are blocks 0, 1, 2 for tool indexes 0 and 1. Pure (strings out); MessagesTranslator below is this
// dialect's stream translator (../translator.ts), which the one relay (../../calls/relay.ts) feeds.
import type { ApiError } from '../../../core/errors.ts';
import { messagesErrorBody } from '../../../http/messages-error-body.ts';
import { DeltaReader } from '../../engine/frames/index.ts';
import type { CallCost, TextUsage } from '../../usage.ts';
import type { FastFrame, StreamTranslator } from '../translator.ts';
import { messagesUsage, type StopReason, stopReasonOf } from './response.ts';

interface ChunkChoice {
  delta?: {
    content?: unknown;
    /** vLLM 0.32's name for a reasoning model's reasoning; earlier versions `reasoning_content`. */
    reasoning?: unknown;
    reasoning_content?: unknown;
    tool_calls?: { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } }[];
  };
  finish_reason?: unknown;
  stop_reason?: unknown;
}

export interface ChatChunk {
  choices?: ChunkChoice[];
}

export const sseEvent = (type: string, data: unknown): string =>
  `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

export const PING_EVENT = sseEvent('ping', { type: 'ping' });

const DELTA_TAIL = Buffer.from('}}\n\n');

type Open = { kind: 'text' } | { kind: 'thinking' } | { kind: 'tool'; toolIndex: number } | null;

export class MessagesStream {
  private block = -1;
  private open: Open = null;
  private finish: unknown = null;
  private engineStop: unknown = null;
  /** A tool call was streamed: a forced call finishes `stop` yet is the client's `tool_use`. */
  private calledTools = false;
  /** The bytes before a text delta's JSON string, for the open block (built once per block). */
  private textHead: Buffer | null = null;

  constructor(
    private readonly o: { id: string; model: string; stopSequences?: readonly string[] | undefined },
  ) {}

  /** The first event; input usage as far as the engine has said (it reports prompt tokens early). */
  start(usage: TextUsage | null): string {
    const u = messagesUsage(usage ?? { inputTokens: 0, cachedTokens: 0, outputTokens: 0 });
    return sseEvent('message_start', {
      type: 'message_start',
      message: {
        id: this.o.id,
        type: 'message',
        role: 'assistant',
        content: [],
        model: this.o.model,
        stop_reason: null,
        stop_sequence: null,
        usage: u,
      },
    });
  }

  /** The events one engine chunk makes (often none: a role-only or usage-only chunk). */
  chunk(c: ChatChunk): string {
    const choice = c.choices?.[0];
    if (choice === undefined) return '';
    let out = '';
    const d = choice.delta;
    if (d !== undefined) {
      const reasoning = typeof d.reasoning === 'string' ? d.reasoning : d.reasoning_content;
      if (typeof reasoning === 'string' && reasoning !== '') {
        if (this.open?.kind !== 'thinking')
          out += this.openBlock({ kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
        out += this.delta({ type: 'thinking_delta', thinking: reasoning });
      }
      if (typeof d.content === 'string' && d.content !== '') {
        if (this.open?.kind !== 'text') out += this.openBlock({ kind: 'text' }, { type: 'text', text: '' });
        out += this.delta({ type: 'text_delta', text: d.content });
      }
      for (const call of Array.isArray(d.tool_calls) ? d.tool_calls : []) {
        const toolIndex = typeof call.index === 'number' ? call.index : 0;
        this.calledTools = true;
        if (this.open?.kind !== 'tool' || this.open.toolIndex !== toolIndex) {
          out += this.openBlock(
            { kind: 'tool', toolIndex },
            {
              type: 'tool_use',
              id: typeof call.id === 'string' ? call.id : `toolu_${this.o.id.slice(4)}_${toolIndex}`,
              name: typeof call.function?.name === 'string' ? call.function.name : '',
              input: {},
            },
          );
        }
        const args = call.function?.arguments;
        if (typeof args === 'string' && args !== '')
          out += this.delta({ type: 'input_json_delta', partial_json: args });
      }
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      this.finish = choice.finish_reason;
      this.engineStop = choice.stop_reason;
    }
    return out;
  }

  /** The engine's finish_reason and stop_reason, read from a frame's bytes (../../engine/frames/delta-frame.ts). */
  finishedWith(finish: string, engineStop: unknown): void {
    this.finish = finish;
    this.engineStop = engineStop;
  }

  /**
   * The events of a text delta given as its JSON string bytes (`"…"`, from ../../engine/frames/delta-frame.ts),
   * copied into the event as they are: the same event chunk() makes, without a parse.
   */
  textDelta(json: Buffer): Buffer[] {
    if (json.length <= 2) return []; // ""
    const out: Buffer[] = [];
    if (this.open?.kind !== 'text' || this.textHead === null) {
      out.push(Buffer.from(this.openBlock({ kind: 'text' }, { type: 'text', text: '' })));
      this.textHead = Buffer.from(
        `event: content_block_delta\ndata: {"type":"content_block_delta","index":${this.block},"delta":{"type":"text_delta","text":`,
      );
    }
    out.push(this.textHead, json, DELTA_TAIL);
    return out;
  }

  /** The last events of a stream the engine finished: the open block closed, the stop reason and usage. */
  end(usage: TextUsage, cost?: CallCost): string {
    const stop = this.stopReason();
    return (
      this.closeBlock() +
      sseEvent('message_delta', {
        type: 'message_delta',
        delta: stop,
        usage: messagesUsage(usage, cost),
      }) +
      sseEvent('message_stop', { type: 'message_stop' })
    );
  }

  /** A failure after the first event: the SDKs raise `event: error`. */
  static error(body: unknown): string {
    return sseEvent('error', body);
  }

  private stopReason(): { stop_reason: StopReason; stop_sequence: string | null } {
    return stopReasonOf(this.finish, this.engineStop, this.o.stopSequences, this.calledTools);
  }

  private openBlock(open: NonNullable<Open>, contentBlock: unknown): string {
    const closed = this.closeBlock();
    this.textHead = null;
    this.block++;
    this.open = open;
    return (
      closed +
      sseEvent('content_block_start', {
        type: 'content_block_start',
        index: this.block,
        content_block: contentBlock,
      })
    );
  }

  private closeBlock(): string {
    if (this.open === null) return '';
    this.open = null;
    return sseEvent('content_block_stop', { type: 'content_block_stop', index: this.block });
  }

  private delta(delta: unknown): string {
    return sseEvent('content_block_delta', { type: 'content_block_delta', index: this.block, delta });
  }
}

/**
 * The Messages stream translator (MSG-2, MSG-7): the usual frames read from their bytes
 * (../../engine/frames/ DeltaReader, shared with Responses: the first, the text frames, the finishing and
 * the usage-only one), any other frame (reasoning, tool calls) parsed and translated; pings while
 * the engine is silent.
 */
export class MessagesTranslator implements StreamTranslator {
  readonly ping = PING_EVENT;
  /** This stream's engine frames read from their bytes. */
  private readonly frames = new DeltaReader();

  constructor(readonly messages: MessagesStream) {}

  head(usage: TextUsage | null): string {
    return this.messages.start(usage);
  }

  fast(block: Buffer, out: Buffer[]): FastFrame | undefined {
    const f = this.frames.read(block);
    if (f === undefined) return undefined;
    // vLLM's matched stop string, parsed from its bytes on the finishing frame alone; a value that
    // is not JSON declines the frame (before anything is written), which the parse way then refuses.
    let stop: unknown = null;
    if (f.finish !== null && f.stopAt !== -1) {
      try {
        stop = JSON.parse(block.toString('utf8', f.stopAt, f.stopEnd));
      } catch {
        return undefined;
      }
    }
    if (f.text !== null) for (const p of this.messages.textDelta(f.text)) out.push(p);
    if (f.finish !== null) this.messages.finishedWith(f.finish, stop);
    return { usageAt: f.usageAt, content: f.text !== null, cached: f.cached };
  }

  chunk(chunk: Record<string, unknown>, out: Buffer[]): void {
    const events = this.messages.chunk(chunk as ChatChunk);
    if (events !== '') out.push(Buffer.from(events));
  }

  end(usage: TextUsage, cost: CallCost): Buffer {
    return Buffer.from(this.messages.end(usage, cost));
  }

  error(err: ApiError, requestId: string): Buffer {
    return Buffer.from(MessagesStream.error(messagesErrorBody(err, requestId)));
  }
}

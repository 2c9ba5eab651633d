// A chat-completions stream → Responses events, one engine chunk at a time, each with its
// sequence_number (from 0): response.created, response.in_progress, then per output item
// output_item.added, its part added, its deltas, its .done events and output_item.done, and last
// response.completed (or response.incomplete when max_output_tokens cut it, response.failed when
// the call failed after the first event). The events are what the openai SDKs' ResponseStream
// accumulates (its snapshot equals the final response). ResponsesTranslator is this dialect's
// stream translator (../translator.ts), fed by the one relay (../../calls/relay.ts). Per call the
// same work as the chat surface's relay, as near as the protocol allows: events are written as
// JSON text (no object built and serialized per event), the response — sent whole three times —
// has its request's part written once (./response-json.ts), and the usual engine frames are
// read from their bytes, never parsed (../../engine/frames/ DeltaReader): a text delta's JSON string is copied
// into a prebuilt event head, its sequence number's tail built once per number.
import type { ApiError } from '../../../core/errors.ts';
import { DeltaReader } from '../../engine/frames/index.ts';
import type { CallCost, TextUsage } from '../../usage.ts';
import type { FastFrame, StreamTranslator } from '../translator.ts';
import { customInput } from './custom-tools.ts';
import { responseErrorCode } from './error-code.ts';
import { callItem, type Echo, itemId, type OutputItem, type Status } from './response.ts';
import { ResponseJson } from './response-json.ts';

/**
 * The end of a text delta event after its JSON string, by sequence number: built once per number
 * for the first thousands (every stream's deltas are numbered from the same few), not per delta.
 */
const TAILS: Buffer[] = [];
const TAILS_KEPT = 8192;
function deltaTail(seq: number): Buffer {
  const kept = TAILS[seq];
  if (kept !== undefined) return kept;
  const tail = Buffer.from(`,"logprobs":[],"sequence_number":${seq}}\n\n`);
  if (seq < TAILS_KEPT) TAILS[seq] = tail;
  return tail;
}

/** The empty text part a message opens with; the empty parts a reasoning item opens with. */
const EMPTY_TEXT_PART = '{"type":"output_text","text":"","annotations":[],"logprobs":[]}';
const EMPTY_REASONING_PART = '{"type":"reasoning_text","text":""}';
const EMPTY_SUMMARY_PART = '{"type":"summary_text","text":""}';

interface ChunkChoice {
  delta?: {
    content?: unknown;
    reasoning_content?: unknown;
    reasoning?: unknown;
    tool_calls?: { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } }[];
  };
  finish_reason?: unknown;
}

/** A finished response: its JSON (as sent) and its output items (for the stored conversation). */
export interface FinishedResponse {
  json: string;
  /** The output items' JSON array. */
  output: string;
  status: Status;
}

const EMPTY = Buffer.alloc(0);

type Open = { kind: 'reasoning' | 'text' } | { kind: 'tool'; toolIndex: number } | null;

export class ResponsesStream {
  private seq = 0;
  private readonly output: OutputItem[] = [];
  private open: Open = null;
  private finish: unknown = null;
  /** The bytes before a text delta's JSON string, for the open message (built once per item). */
  private textHead: Buffer | null = null;
  /**
   * The open message's text so far as one JSON string (`"` and the deltas' string bodies, copied
   * in: no engine frame is held), parsed once when the item closes; `textLength` bytes are used.
   */
  private textJson: Buffer = EMPTY;
  private textLength = 0;
  /** The open custom tool call's JSON arguments so far. */
  private customArgs = '';

  /** The JSON of each closed output item, as output_item.done sent it (the final output is these). */
  private readonly closedJson: string[] = [];
  /** The response's JSON, its request's part serialized once (it is sent whole three times). */
  private readonly json: ResponseJson;

  constructor(private readonly echo: Echo) {
    this.json = new ResponseJson(echo);
  }

  /**
   * One event: `fields` is the JSON of its members between `type` and `sequence_number`, written
   * by the caller (no object built, spread and serialized per event). Event types and our ids
   * need no escaping.
   */
  private event(type: string, fields: string): string {
    return `event: ${type}\ndata: {"type":"${type}",${fields},"sequence_number":${this.seq++}}\n\n`;
  }

  start(): string {
    const r = `"response":${this.json.render('in_progress', [], null)}`;
    return this.event('response.created', r) + this.event('response.in_progress', r);
  }

  chunk(c: { choices?: ChunkChoice[] }): string {
    const choice = c.choices?.[0];
    if (choice === undefined) return '';
    let out = '';
    const d = choice.delta;
    if (d !== undefined) {
      const reasoning = typeof d.reasoning_content === 'string' ? d.reasoning_content : d.reasoning;
      if (typeof reasoning === 'string' && reasoning !== '') out += this.reasoningDelta(reasoning);
      if (typeof d.content === 'string' && d.content !== '') out += this.textDelta(d.content);
      for (const call of Array.isArray(d.tool_calls) ? d.tool_calls : []) {
        const toolIndex = typeof call.index === 'number' ? call.index : 0;
        if (this.open?.kind !== 'tool' || this.open.toolIndex !== toolIndex)
          out += this.openItem(
            { kind: 'tool', toolIndex },
            callItem(
              this.echo,
              typeof call.function?.name === 'string' ? call.function.name : '',
              typeof call.id === 'string' ? call.id : `call_${this.echo.id.slice(5)}_${toolIndex}`,
              '',
              'in_progress',
            ),
          );
        const args = call.function?.arguments;
        const item = this.current() as Extract<OutputItem, { type: 'function_call' | 'custom_tool_call' }>;
        // A custom tool's text is inside the JSON arguments: it is sent whole when the call ends.
        if (typeof args === 'string' && item.type === 'custom_tool_call') this.customArgs += args;
        else if (typeof args === 'string' && args !== '' && item.type === 'function_call') {
          item.arguments += args;
          out += this.event(
            'response.function_call_arguments.delta',
            `"item_id":"${item.id}","output_index":${this.output.length - 1},"delta":${JSON.stringify(args)}`,
          );
        }
      }
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined)
      this.finish = choice.finish_reason;
    return out;
  }

  /** The engine's finish_reason, read from a frame's bytes (../../engine/frames/delta-frame.ts). */
  finishedWith(reason: string): void {
    this.finish = reason;
  }

  /** A text delta given as text (the parsed way). */
  textDelta(text: string): string {
    const out: Buffer[] = [];
    this.textDeltaJson(Buffer.from(JSON.stringify(text)), out);
    return Buffer.concat(out).toString();
  }

  /**
   * A text delta given as its JSON string bytes (`"…"`, from ../../engine/frames/delta-frame.ts), copied
   * into a prebuilt event as they are: the usual frame needs no parse and no stringify. The text
   * itself is kept as JSON string bodies and parsed once, when its item closes. The event's
   * pieces go onto `out` (the relay writes a read's pieces at once).
   */
  textDeltaJson(json: Buffer, out: Buffer[]): void {
    if (this.open?.kind !== 'text' || this.textHead === null) {
      const id = itemId('msg');
      let head = this.openItem(
        { kind: 'text' },
        { type: 'message', id, role: 'assistant', status: 'in_progress', content: [] },
      );
      const part = { type: 'output_text' as const, text: '', annotations: [], logprobs: [] };
      (this.current() as Extract<OutputItem, { type: 'message' }>).content.push(part);
      head += this.event(
        'response.content_part.added',
        `"item_id":"${id}","output_index":${this.output.length - 1},"content_index":0,"part":${EMPTY_TEXT_PART}`,
      );
      out.push(Buffer.from(head));
      this.textHead = Buffer.from(
        `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"${id}","output_index":${this.output.length - 1},"content_index":0,"delta":`,
      );
      this.textLength = 1; // the opening quote
    }
    this.keepText(json);
    out.push(this.textHead, json, deltaTail(this.seq++));
  }

  /** The body of a delta's JSON string (`"…"`) added to textJson, which grows by doubling. */
  private keepText(json: Buffer): void {
    const body = json.length - 2;
    const need = this.textLength + body + 1; // and the closing quote, at the end
    if (need > this.textJson.length) {
      const grown = Buffer.allocUnsafe(Math.max(256, need * 2));
      this.textJson.copy(grown, 0, 0, this.textLength);
      this.textJson = grown;
      grown[0] = 34;
    }
    json.copy(this.textJson, this.textLength, 1, json.length - 1);
    this.textLength += body;
  }

  /** The open message's text, parsed from its JSON string at once. */
  private settleText(): void {
    const item = this.current();
    if (item?.type !== 'message' || this.textLength <= 1) return;
    this.textJson[this.textLength] = 34;
    item.content[0]!.text += JSON.parse(this.textJson.toString('utf8', 0, this.textLength + 1)) as string;
    this.textLength = 1;
  }

  /**
   * A reasoning delta: the item's reasoning_text, and — when the request asked for a summary
   * (./response.ts summarised) — the same text as its summary, the only reasoning the Vercel AI SDK
   * and Codex show by default. There is no summarizer here: the summary is the reasoning itself.
   */
  private reasoningDelta(text: string): string {
    let out = '';
    const summarised = this.echo.summarised;
    if (this.open?.kind !== 'reasoning') {
      const id = itemId('rs');
      out += this.openItem({ kind: 'reasoning' }, { type: 'reasoning', id, summary: [], content: [] });
      const item = this.current() as Extract<OutputItem, { type: 'reasoning' }>;
      const at = `"item_id":"${id}","output_index":${this.output.length - 1}`;
      if (summarised) {
        item.summary.push({ type: 'summary_text', text: '' });
        out += this.event(
          'response.reasoning_summary_part.added',
          `${at},"summary_index":0,"part":${EMPTY_SUMMARY_PART}`,
        );
      }
      item.content.push({ type: 'reasoning_text', text: '' });
      out += this.event(
        'response.content_part.added',
        `${at},"content_index":0,"part":${EMPTY_REASONING_PART}`,
      );
    }
    const item = this.current() as Extract<OutputItem, { type: 'reasoning' }>;
    item.content[0]!.text += text;
    const at = `"item_id":"${item.id}","output_index":${this.output.length - 1}`;
    const delta = JSON.stringify(text);
    if (summarised) {
      item.summary[0]!.text += text;
      out += this.event('response.reasoning_summary_text.delta', `${at},"summary_index":0,"delta":${delta}`);
    }
    return out + this.event('response.reasoning_text.delta', `${at},"content_index":0,"delta":${delta}`);
  }

  /** The final response of a stream the engine finished (its JSON and output), and its last events. */
  end(usage: TextUsage, cost: CallCost | null = null): { events: string; response: FinishedResponse } {
    const status: Status = this.finish === 'length' ? 'incomplete' : 'completed';
    const events = this.closeItem(status === 'incomplete' ? 'incomplete' : 'completed');
    const output = `[${this.closedJson.join(',')}]`; // every item is closed
    const json = this.json.render(status, this.output, usage, null, cost, output);
    const type = status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    return { events: events + this.event(type, `"response":${json}`), response: { json, output, status } };
  }

  /**
   * A failure after the first event: OpenAI's `error` event (the catalogue's code, which the SDKs
   * raise), then response.failed, whose error code is one the SDKs' Response type allows
   * (./error-code.ts).
   */
  failed(
    err: ApiError,
    billed?: { usage: TextUsage; cost: CallCost },
  ): { events: string; response: FinishedResponse } {
    if (this.open?.kind === 'text') this.settleText();
    const error = { code: responseErrorCode(err.code), message: err.message };
    // What was generated was billed: the failed response says how much (OpenAI's carries usage too).
    const usage = billed?.usage ?? { inputTokens: 0, cachedTokens: 0, outputTokens: 0 };
    const json = this.json.render('failed', this.output, usage, error, billed?.cost ?? null);
    const events =
      this.event(
        'error',
        `"code":${JSON.stringify(err.code)},"message":${JSON.stringify(err.message)},"param":${JSON.stringify(err.param ?? null)}`,
      ) + this.event('response.failed', `"response":${json}`);
    return { events, response: { json, output: JSON.stringify(this.output), status: 'failed' } };
  }

  /**
   * A background response cancelled mid-stream (../../calls/background-responses.ts): its output so
   * far and the usage billed for it. No event: OpenAI's stream has none for a cancel.
   */
  cancelled(billed?: { usage: TextUsage; cost: CallCost }): FinishedResponse {
    if (this.open?.kind === 'text') this.settleText();
    const usage = billed?.usage ?? { inputTokens: 0, cachedTokens: 0, outputTokens: 0 };
    return {
      json: this.json.render('cancelled', this.output, usage, null, billed?.cost ?? null),
      output: JSON.stringify(this.output),
      status: 'cancelled',
    };
  }

  private current(): OutputItem {
    return this.output[this.output.length - 1]!;
  }

  private openItem(open: NonNullable<Open>, item: OutputItem): string {
    const closed = this.closeItem('completed');
    this.open = open;
    this.output.push(item);
    // Serialized now, so the item's later changes (text, status) are not in this event.
    return (
      closed +
      this.event(
        'response.output_item.added',
        `"output_index":${this.output.length - 1},"item":${JSON.stringify(item)}`,
      )
    );
  }

  private closeItem(status: 'completed' | 'incomplete'): string {
    if (this.open === null) return '';
    if (this.open.kind === 'text') this.settleText();
    this.open = null;
    this.textHead = null;
    const item = this.current();
    const output_index = this.output.length - 1;
    const at = `"item_id":"${item.id}","output_index":${output_index}`;
    let out = '';
    if (item.type === 'message') {
      item.status = status;
      const text = JSON.stringify(item.content[0]!.text); // once, for the three events that carry it
      const part = `{"type":"output_text","text":${text},"annotations":[],"logprobs":[]}`;
      out += this.event('response.output_text.done', `${at},"content_index":0,"text":${text},"logprobs":[]`);
      out += this.event('response.content_part.done', `${at},"content_index":0,"part":${part}`);
      // The item as JSON.stringify writes it (OutputItem's message: type, id, role, status, content).
      const json = `{"type":"message","id":"${item.id}","role":"assistant","status":"${status}","content":[${part}]}`;
      this.closedJson.push(json);
      return out + this.event('response.output_item.done', `"output_index":${output_index},"item":${json}`);
    }
    if (item.type === 'reasoning') {
      const text = JSON.stringify(item.content[0]!.text);
      out += this.event('response.reasoning_text.done', `${at},"content_index":0,"text":${text}`);
      out += this.event(
        'response.content_part.done',
        `${at},"content_index":0,"part":{"type":"reasoning_text","text":${text}}`,
      );
      if (item.summary.length > 0) {
        out += this.event('response.reasoning_summary_text.done', `${at},"summary_index":0,"text":${text}`);
        out += this.event(
          'response.reasoning_summary_part.done',
          `${at},"summary_index":0,"part":{"type":"summary_text","text":${text}}`,
        );
      }
    } else if (item.type === 'custom_tool_call') {
      item.status = status;
      item.input = customInput(this.customArgs);
      this.customArgs = '';
      const input = JSON.stringify(item.input);
      out += this.event('response.custom_tool_call_input.delta', `${at},"delta":${input}`);
      out += this.event('response.custom_tool_call_input.done', `${at},"input":${input}`);
    } else {
      item.status = status;
      out += this.event(
        'response.function_call_arguments.done',
        `${at},"name":${JSON.stringify(item.name)},"arguments":${JSON.stringify(item.arguments)}`,
      );
    }
    const json = JSON.stringify(item);
    this.closedJson.push(json);
    return out + this.event('response.output_item.done', `"output_index":${output_index},"item":${json}`);
  }
}

/**
 * The Responses stream translator: the usual frames read from their bytes (a text delta's JSON
 * string copied into its event, the text parsed once when its item closes; the finish reason
 * kept for the end), any other frame (reasoning, tool calls) parsed and translated. No pings:
 * Responses streams have no keep-alive event.
 */
export class ResponsesTranslator implements StreamTranslator {
  readonly ping = null;
  /** This stream's engine frames read from their bytes. */
  private readonly frames = new DeltaReader();

  constructor(
    readonly stream: ResponsesStream,
    /** Called with the final response of a finished stream (kept when the request asked to store). */
    private readonly onEnd: ((response: FinishedResponse) => void) | null,
  ) {}

  head(): string {
    return this.stream.start();
  }

  fast(block: Buffer, out: Buffer[]): FastFrame | undefined {
    const f = this.frames.read(block);
    if (f === undefined) return undefined;
    if (f.text !== null) this.stream.textDeltaJson(f.text, out);
    if (f.finish !== null) this.stream.finishedWith(f.finish);
    return { usageAt: f.usageAt, content: f.text !== null, cached: f.cached };
  }

  chunk(chunk: Record<string, unknown>, out: Buffer[]): void {
    const events = this.stream.chunk(chunk as { choices?: ChunkChoice[] });
    if (events !== '') out.push(Buffer.from(events));
  }

  end(usage: TextUsage, cost: CallCost): Buffer {
    const { events, response } = this.stream.end(usage, cost);
    this.onEnd?.(response);
    return Buffer.from(events);
  }

  error(err: ApiError, _requestId: string, billed?: { usage: TextUsage; cost: CallCost }): Buffer {
    const { events, response } = this.stream.failed(err, billed);
    this.onEnd?.(response);
    return Buffer.from(events);
  }
}

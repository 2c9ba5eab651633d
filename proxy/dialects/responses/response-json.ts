// A response object's JSON without re-serializing what its request fixed. A stream sends the whole
// response three times (response.created, response.in_progress, and the final one), and most of
// it — instructions, tools (Codex sends a dozen or more, each with its JSON schema), text format,
// metadata — is the request echoed: that part is serialized once per call, and only the state
// (./response.ts responseState: status, output, usage, …) each time. The bytes parse to exactly
// responseObject(…)'s value, in its key order (response-json.test.ts).
import { randomUUID } from 'node:crypto';
import type { CallCost } from '../../billing/call-cost.ts';
import type { TextUsage } from '../../billing/text-quote.ts';
import { type Echo, type OutputItem, responseObject, responseState, type Status } from './response.ts';

const STATE_KEYS = Object.keys(responseState('in_progress', [], null));

/**
 * Stands for a state value while the rest is serialized, then cut out. Random per process, and a
 * whole JSON string value: no request can contain it.
 */
const MARK = `\u0000${randomUUID()}`;
const MARK_JSON = JSON.stringify(MARK);

export class ResponseJson {
  /** The JSON around the state's values: `{"id":…,"status":`, `,"background":false,"error":`, … `}`. */
  private readonly frames: string[];
  /** The state's keys, in the order their values go between the frames. */
  private readonly keys: (keyof ReturnType<typeof responseState>)[];

  constructor(echo: Echo) {
    const r: Record<string, unknown> = responseObject(echo, 'in_progress', [], null);
    this.keys = Object.keys(r).filter((k) => STATE_KEYS.includes(k)) as typeof this.keys;
    for (const k of this.keys) r[k] = MARK;
    // One native serialization of the request's part, cut where the state goes.
    this.frames = JSON.stringify(r).split(MARK_JSON);
  }

  /** JSON.stringify(responseObject(echo, …)), the request's part copied as it was serialized. */
  render(
    status: Status,
    output: OutputItem[],
    usage: TextUsage | null,
    error: { code: string; message: string } | null = null,
    cost: CallCost | null = null,
  ): string {
    const state = responseState(status, output, usage, error, cost);
    let out = this.frames[0]!;
    for (let i = 0; i < this.keys.length; i++)
      out += JSON.stringify(state[this.keys[i]!]) + this.frames[i + 1]!;
    return out;
  }
}

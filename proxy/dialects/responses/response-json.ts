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

type StateKey = keyof ReturnType<typeof responseState>;
const STATE_KEYS = new Set(Object.keys(responseState('in_progress', [], null)));

/**
 * Stands for a state value while the rest is serialized, then cut out: a whole JSON string value,
 * random per process, so no request can hold it (no client knows it). Plain ASCII, which keeps
 * the serializer on its fast path.
 */
const MARK = `mark-${randomUUID()}`;
const MARK_JSON = JSON.stringify(MARK);

/** The state keys in the order responseObject writes them (the same for every request). */
const ORDER = Object.keys(
  responseObject(
    { id: '', createdAt: 0, model: '', req: {} as Echo['req'], maxOutputTokens: 0, namespaced: new Map() },
    'in_progress',
    [],
    null,
  ),
).filter((k) => STATE_KEYS.has(k)) as StateKey[];

export class ResponseJson {
  /** The JSON around the state's values: `{"id":…,"status":`, `,"background":false,"error":`, … `}`. */
  private readonly frames: string[];

  constructor(echo: Echo) {
    const r: Record<string, unknown> = responseObject(echo, 'in_progress', [], null);
    for (const k of ORDER) r[k] = MARK;
    // One native serialization of the request's part, cut where the state goes.
    this.frames = JSON.stringify(r).split(MARK_JSON);
  }

  /**
   * JSON.stringify(responseObject(echo, …)), the request's part copied as it was serialized;
   * `outputJson` is the output's JSON when the caller has it already (each item was sent whole
   * as it closed).
   */
  render(
    status: Status,
    output: OutputItem[],
    usage: TextUsage | null,
    error: { code: string; message: string } | null = null,
    cost: CallCost | null = null,
    outputJson?: string,
  ): string {
    const state = responseState(status, output, usage, error, cost);
    const f = this.frames;
    let out = f[0]!;
    for (let i = 0; i < ORDER.length; i++) {
      const k = ORDER[i]!;
      out += (k === 'output' && outputJson !== undefined ? outputJson : JSON.stringify(state[k])) + f[i + 1]!;
    }
    return out;
  }
}

// Opening an engine's chat stream: the request sent, its first frame read, failing over to other
// endpoints until one delivers. Nothing reaches the client before the first frame is in hand, so
// an engine that dies before it is retried elsewhere or answered with a real status.
import { ApiError } from '../../core/errors.ts';
import { type EngineCall, type EngineDeps, streamRefusal } from '../engine/call.ts';
import type { Cancel } from '../engine/cancel.ts';
import { EngineEvents } from '../engine/events.ts';
import { isDone, type SseEvent } from '../engine/sse.ts';

export interface StreamStart {
  call: EngineCall;
  events: EngineEvents;
  first: Record<string, unknown>;
  /** The first frame as it came (its bytes are relayed as they are when in the usual shape). */
  firstEvent: SseEvent;
  /** performance.now() when the first frame arrived from the engine. */
  firstAt: number;
  close(): void;
}

/** Opens the engine stream and reads its first frame, failing over to other endpoints until one delivers. */
export async function firstStreamEvent(
  engine: EngineDeps,
  cancel: Cancel,
  open: () => Promise<EngineCall>,
): Promise<StreamStart> {
  for (;;) {
    const call = await open(); // throws once every allowed endpoint was tried
    const events = new EngineEvents(call.body);
    const close = () => {
      call.body.destroy();
      call.release();
    };
    try {
      const ev = await events.next();
      if (ev === null || isDone(ev)) throw new Error('engine stream ended before its first frame');
      const first = parseChunk(ev.data);
      if (first.error !== undefined)
        // A refusal (a 4xx `code`) is the client's: answered as its status, no failover, no mark
        // against the endpoint's health. Any other error frame is the engine failing.
        throw streamRefusal(first.error) ?? new Error(`engine error frame: ${JSON.stringify(first.error)}`);
      return { call, events, first, firstEvent: ev, firstAt: performance.now(), close };
    } catch (err) {
      close();
      if (cancel.aborted) throw cancel.reason ?? err;
      if (err instanceof ApiError) throw err; // the engine refused the request (above)
      engine.health.recordFailure(call.url);
      engine.metrics.engineErrors.inc({ model: '', kind: 'stream' });
    }
  }
}

export function parseChunk(data: string): Record<string, unknown> {
  const v: unknown = JSON.parse(data);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error('engine frame is not an object');
  return v as Record<string, unknown>;
}

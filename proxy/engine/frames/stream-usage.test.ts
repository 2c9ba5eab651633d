// When a relayed stream's first token came (issue 48 item 5): StreamUsage.generating turns true on
// the first frame that carried a generated token — content, a tool call, reasoning, or usage that
// counts output — never on an engine's empty role frame, whether the frame was read from its bytes by a translator (the usual
// way; a frame with usage is not read for content there) or parsed. Over every stream of
// test/proxy/engine-streams.ts: the recorded engines', the simulator's, hand-made ones.
import { describe, expect, it } from 'vitest';
import {
  block,
  type Chunk,
  parsed,
  recorded,
  STREAMS,
  simulatorStreams,
} from '../../../test/proxy/engine-streams.ts';
import { ChatStream } from '../../dialects/openai/stream.ts';
import { hasOutput } from './reported-usage.ts';
import { StreamUsage } from './stream-usage.ts';

const ALL = [...recorded, ...STREAMS, ...(await simulatorStreams())];

/** The index of the frame on which `generating` turned true, as the relay feeds StreamUsage (-1: never). */
function firstTokenFrame(frames: Chunk[], fast: boolean, continuousUsage: boolean): number {
  const blocks = frames.map(block);
  const model = String(frames.find((f) => typeof f.model === 'string')?.model ?? 'm');
  const tr = new ChatStream({ model: 'canonical', includeUsage: true, continuousUsage }, model);
  const usage = new StreamUsage(parsed(blocks[0]!));
  for (let i = 0; i < blocks.length; i++) {
    const f = fast ? tr.fast(blocks[i]!, []) : undefined;
    if (f !== undefined) usage.read(blocks[i]!, f);
    else {
      const chunk = parsed(blocks[i]!);
      if (chunk.error !== undefined) break;
      usage.parsed(chunk);
    }
    if (usage.generating) return i;
  }
  return -1;
}

describe('the first token of a relayed stream', () => {
  it('the streams include one whose first frame is an empty role frame', () => {
    expect(ALL.some(([, fs]) => fs.length > 1 && !hasOutput(fs[0]!) && fs.slice(1).some(hasOutput))).toBe(
      true,
    );
  });

  for (const [name, frames] of ALL)
    it(`${name}: the first frame with a token, read from the bytes or parsed`, () => {
      const errorAt = frames.findIndex((f) => f.error !== undefined);
      const token = (f: Chunk) =>
        hasOutput(f) || ((f.usage as { completion_tokens?: number } | null)?.completion_tokens ?? 0) > 0;
      const expected = frames.findIndex((f, i) => (errorAt === -1 || i < errorAt) && token(f));
      for (const continuous of [true, false]) {
        expect(firstTokenFrame(frames, true, continuous)).toBe(expected);
        expect(firstTokenFrame(frames, false, continuous)).toBe(expected);
      }
    });
});

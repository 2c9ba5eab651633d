import { describe, expect, it } from 'vitest';
import { finishReasonIn, LastFrames } from './finish-reason.ts';

describe('finish reason from the bytes', () => {
  it('reads the last non-null one, in any spacing; null when none or not a word', () => {
    expect(finishReasonIn('{"choices":[{"index":0,"finish_reason":"stop"}]}')).toBe('stop');
    expect(finishReasonIn('{"finish_reason": "length"}')).toBe('length');
    expect(finishReasonIn('{"a":{"finish_reason":"tool_calls"},"b":{"finish_reason":null}}')).toBe(
      'tool_calls',
    );
    expect(finishReasonIn('{"finish_reason":null}')).toBeNull();
    expect(finishReasonIn('{"content":"x"}')).toBeNull();
    expect(finishReasonIn(`{"finish_reason":"${'a'.repeat(200)}"}`)).toBeNull();
    expect(finishReasonIn('{"finish_reason":"St\\u006fp"}')).toBeNull();
  });

  it("a stream's: found in its last frames, newest first; a cut stream's is null", () => {
    const frames = new LastFrames();
    frames.add('data: {"choices":[{"delta":{"content":"a"},"finish_reason":null}]}\n\n');
    expect(frames.finishReason()).toBeNull();
    frames.add(Buffer.from('data: {"choices":[{"delta":{},"finish_reason":"length"}]}\n\n'));
    frames.add('data: {"choices":[],"usage":{"prompt_tokens":1}}\n\n');
    expect(frames.finishReason()).toBe('length');
    frames.add('x');
    frames.add('y');
    frames.add('z');
    expect(frames.finishReason()).toBeNull();
  });
});

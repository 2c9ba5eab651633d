// A response's JSON made of its request's part serialized once is the response object's JSON,
// byte for byte, in every state and for every kind of request.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ResponsesRequest } from '../../schemas/responses.ts';
import { echoOf, type OutputItem, responseObject, type Status } from './response.ts';
import { ResponseJson } from './response-json.ts';

const bare = { model: 'm', input: 'hi' } as ResponsesRequest;
const full = {
  model: 'm',
  input: 'hi',
  instructions: 'Be brief. "Quoted", \\ and \u0000 and 東京',
  tools: [
    { type: 'function', name: 'f', description: 'd', parameters: { type: 'object', properties: {} } },
    { type: 'function', name: 'g', parameters: null, strict: true },
  ],
  tool_choice: 'required',
  parallel_tool_calls: false,
  max_output_tokens: 40,
  temperature: 0.2,
  top_p: 0.9,
  metadata: { a: 'b' },
  previous_response_id: 'resp_1',
  reasoning: { effort: 'low', summary: 'auto' },
  text: { format: { type: 'json_object' }, verbosity: 'low' },
  prompt_cache_key: 'k',
  safety_identifier: 's',
  user: 'u',
} as ResponsesRequest;

// Some fields given, the rest left out or null: each falls back as responseObject's does.
const partial = {
  model: 'm',
  input: 'hi',
  instructions: null,
  tools: [{ type: 'function', name: 'f', strict: false, parameters: { type: 'object' } }],
  reasoning: { effort: 'high' },
  text: { verbosity: 'high' },
  metadata: null,
  user: null,
  temperature: 0,
  top_p: null,
} as unknown as ResponsesRequest;

const output: OutputItem[] = [
  { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'hm' }] },
  {
    type: 'message',
    id: 'msg_1',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: 'Hi "there"\n', annotations: [], logprobs: [] }],
  },
  { type: 'function_call', id: 'fc_1', call_id: 'c', name: 'f', arguments: '{}', status: 'completed' },
];
const usage = { inputTokens: 9, cachedTokens: 2, outputTokens: 3 };

// completed_at is the clock's second: one clock for both sides.
beforeAll(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(1_800_000_000_500);
});
afterAll(() => {
  vi.useRealTimers();
});

describe('ResponseJson', () => {
  it.each([
    ['a bare request', bare],
    ['every request field', full],
    ['some fields, some null', partial],
  ])('%s: the same bytes as JSON.stringify(responseObject(…)) in every state', (_name, req) => {
    const echo = echoOf(req, 'm', 40, new Map());
    const json = new ResponseJson(echo);
    const states: [Status, OutputItem[], typeof usage | null, { code: string; message: string } | null][] = [
      ['in_progress', [], null, null],
      ['completed', output, usage, null],
      ['incomplete', output.slice(1, 2), usage, null],
      ['failed', output.slice(0, 1), null, { code: 'server_error', message: 'boom' }],
    ];
    const cost = { cost: '0.000001', currency: 'USD' };
    for (const [status, out, u, error] of states) {
      const want = JSON.stringify(responseObject(echo, status, out, u, error));
      expect(json.render(status, out, u, error)).toBe(want);
      // With the call's cost, and with the output's JSON given (as a stream's end gives it).
      const costed = JSON.stringify(responseObject(echo, status, out, u, error, cost));
      expect(json.render(status, out, u, error, cost, JSON.stringify(out))).toBe(costed);
    }
  });
});

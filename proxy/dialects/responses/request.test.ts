// The Responses → chat translation, piece by piece (the end-to-end behaviour is
// test/proxy/responses.test.ts).
import { describe, expect, it } from 'vitest';
import { type ResponsesRequest, responsesRequest } from '../../schemas/responses.ts';
import { toChatForm } from './request.ts';

const all = { tools: true, vision: true, reasoning: true };
const req = (body: Record<string, unknown>): ResponsesRequest =>
  responsesRequest.parse({ model: 'm', input: 'hi', ...body });

describe('toChatForm', () => {
  it('parallel function_call items become one assistant message; outputs become tool messages; reasoning items are left out', () => {
    const { messages } = toChatForm(
      req({
        input: [
          { role: 'user', content: 'go' },
          { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'hmm' }] },
          { type: 'function_call', call_id: 'a', name: 'f', arguments: '{}' },
          { type: 'function_call', call_id: 'b', name: 'g', arguments: '{"x":1}' },
          { type: 'function_call_output', call_id: 'a', output: 'A' },
          { type: 'function_call_output', call_id: 'b', output: [{ type: 'input_text', text: 'B' }] },
        ],
      }),
      all,
    );
    expect(messages).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } },
          { id: 'b', type: 'function', function: { name: 'g', arguments: '{"x":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: 'A' },
      { role: 'tool', tool_call_id: 'b', content: 'B' },
    ]);
  });

  it('assistant output_text and refusal parts are its text; an image there is refused by path', () => {
    const { messages } = toChatForm(
      req({
        input: [
          { role: 'user', content: 'q' },
          {
            type: 'message',
            role: 'assistant',
            content: [
              { type: 'output_text', text: 'a', annotations: [] },
              { type: 'refusal', refusal: 'b' },
            ],
          },
          { role: 'user', content: 'r' },
        ],
      }),
      all,
    );
    expect(messages[1]).toEqual({ role: 'assistant', content: 'ab' });
    expect(() =>
      toChatForm(
        req({
          input: [
            { role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x.test/a.png' }] },
          ],
        }),
        all,
      ),
    ).toThrow(/image can only appear in a user message/);
  });

  it.each([
    ['minimal', { reasoning_effort: 'low' }],
    ['medium', { reasoning_effort: 'medium' }],
    ['xhigh', { reasoning_effort: 'high' }],
    ['none', { chat_template_kwargs: { enable_thinking: false } }],
  ])('reasoning.effort %s on a reasoning model → %o', (effort, fields) => {
    expect(toChatForm(req({ reasoning: { effort } }), all).fields).toEqual(fields);
  });

  it('reasoning.effort is a hint without effect on a model that does not reason', () => {
    expect(toChatForm(req({ reasoning: { effort: 'high' } }), { ...all, reasoning: false }).fields).toEqual(
      {},
    );
  });

  it('text.format json_object and text are chat response_format or nothing', () => {
    expect(toChatForm(req({ text: { format: { type: 'json_object' } } }), all).fields).toEqual({
      response_format: { type: 'json_object' },
    });
    expect(toChatForm(req({ text: { format: { type: 'text' } } }), all).fields).toEqual({});
  });

  it('tool_choice without tools: none and auto say nothing, required is refused', () => {
    expect(toChatForm(req({ tool_choice: 'auto' }), all).fields).toEqual({});
    expect(() => toChatForm(req({ tool_choice: 'required' }), all)).toThrow(/needs tools/);
  });

  it('an input of instructions alone has nothing to answer', () => {
    expect(() => toChatForm(req({ input: [{ role: 'system', content: 'x' }] }), all)).toThrow(/no message/);
  });
});

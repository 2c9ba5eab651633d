import { describe, expect, it } from 'vitest';
import type { ResponsesItem } from '../../schemas/responses.ts';
import { inputItemsPage, listedItem } from './input-items.ts';

const RESP = 'resp_0123456789abcdef01234567';

describe('listedItem: each stored input item as the ResponseItem OpenAI lists', () => {
  const cases: [string, ResponsesItem, Record<string, unknown>][] = [
    [
      'a bare user message: its text as an input_text part',
      { role: 'user', content: 'hi' },
      {
        id: 'x',
        type: 'message',
        role: 'user',
        status: 'completed',
        content: [{ type: 'input_text', text: 'hi' }],
      },
    ],
    [
      'an assistant message given as a string: output_text with its arrays',
      { role: 'assistant', content: 'yo' },
      {
        id: 'x',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'yo', annotations: [], logprobs: [] }],
      },
    ],
    [
      'an image part: its url, detail auto when unsaid',
      { role: 'user', content: [{ type: 'input_image', image_url: 'data:x' }] },
      {
        id: 'x',
        type: 'message',
        role: 'user',
        status: 'completed',
        content: [{ type: 'input_image', image_url: 'data:x', file_id: null, detail: 'auto' }],
      },
    ],
    [
      'a function call, without the SDK helpers’ parsed_arguments',
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', parsed_arguments: {} },
      { id: 'x', type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', status: 'completed' },
    ],
    [
      'a function call output',
      { type: 'function_call_output', call_id: 'c1', output: 'ok' },
      { id: 'x', type: 'function_call_output', call_id: 'c1', output: 'ok', status: 'completed' },
    ],
    [
      'a reasoning item',
      { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 't' }] },
      { id: 'x', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 't' }] },
    ],
  ];
  it.each(cases)('%s', (_name, item, listed) => {
    expect(listedItem(item, 'x')).toEqual(listed);
  });
});

describe('inputItemsPage', () => {
  const items: ResponsesItem[] = [
    { role: 'user', content: 'a' },
    { type: 'function_call', id: 'fc_own', call_id: 'c', name: 'f', arguments: '' },
    { role: 'user', content: 'b' },
    { type: 'message', id: 'msg_out', role: 'assistant', content: 'answer' }, // the output
  ];
  const ids = (p: ReturnType<typeof inputItemsPage>) => p!.data.map((i) => i.id);

  it('the output is not input; an item’s own id is kept, the others named from the response and position', () => {
    const page = inputItemsPage(RESP, items, 1, { limit: 20, order: 'asc' });
    expect(ids(page)).toEqual([
      `msg_0123456789abcdef012345670000`,
      'fc_own',
      `msg_0123456789abcdef012345670002`,
    ]);
    expect(page).toMatchObject({ object: 'list', has_more: false });
    expect(page!.first_id).toBe(ids(page)[0]);
    expect(page!.last_id).toBe(ids(page)[2]);
  });

  it('desc by default order; after pages on; after an id not listed is null', () => {
    const first = inputItemsPage(RESP, items, 1, { limit: 2, order: 'desc' });
    expect(ids(first)).toEqual([`msg_0123456789abcdef012345670002`, 'fc_own']);
    expect(first!.has_more).toBe(true);
    const next = inputItemsPage(RESP, items, 1, { limit: 2, order: 'desc', after: 'fc_own' });
    expect(ids(next)).toEqual([`msg_0123456789abcdef012345670000`]);
    expect(next!.has_more).toBe(false);
    expect(inputItemsPage(RESP, items, 1, { limit: 2, order: 'desc', after: 'msg_out' })).toBeNull();
  });
});

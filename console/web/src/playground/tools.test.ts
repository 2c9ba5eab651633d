import { describe, expect, it } from 'vitest';
import { DEFAULT_PARAMS, paramFields } from './params.ts';
import { parseTools, ToolCalls, toolFields } from './tools.ts';

const weather = { name: 'get_weather', description: 'Weather now', parameters: { type: 'object' } };

describe('tools as written (issue 37 item 3)', () => {
  it.each([
    ['OpenAI shape', [{ type: 'function', function: weather }]],
    [
      'Anthropic shape',
      [{ name: 'get_weather', description: 'Weather now', input_schema: { type: 'object' } }],
    ],
    ['bare', [weather]],
  ])('reads the %s', (_, tools) => {
    expect(parseTools(JSON.stringify(tools))).toEqual({ tools: [weather] });
  });

  it.each([
    ['{', /not JSON/],
    ['{"name": "x"}', /array/],
    ['[{"description": "no name"}]', /Tool 1 needs a name/],
    ['[{"name": "has space"}]', /Tool 1 needs a name/],
    ['[{"name": "ok", "parameters": []}]', /parameters must be/],
  ])('refuses %s', (text, why) => {
    const r = parseTools(text);
    expect('error' in r && r.error).toMatch(why);
  });

  it('empty text is no tools, and no tool fields are sent', () => {
    expect(parseTools('  ')).toEqual({ tools: [] });
    expect(toolFields([], 'auto', 'chat')).toEqual({});
    expect(paramFields(DEFAULT_PARAMS, 'chat')).not.toHaveProperty('tools');
  });

  it('are sent in each dialect’s names', () => {
    expect(toolFields([weather], 'required', 'chat')).toEqual({
      tools: [{ type: 'function', function: weather }],
      tool_choice: 'required',
    });
    expect(toolFields([weather], 'required', 'messages')).toEqual({
      tools: [{ name: 'get_weather', description: 'Weather now', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any' },
    });
    const text = JSON.stringify([weather]);
    expect(paramFields({ ...DEFAULT_PARAMS, tools: text, toolChoice: 'none' }, 'messages')).toMatchObject({
      tool_choice: { type: 'none' },
    });
  });
});

describe('tool calls of a streamed reply', () => {
  it('gathers chat deltas by index, arguments in pieces', () => {
    const calls = new ToolCalls();
    calls.chatDelta([{ index: 0, id: 'c1', function: { name: 'get_weather', arguments: '' } }]);
    calls.chatDelta([{ index: 0, function: { arguments: '{"city":' } }]);
    calls.chatDelta([{ index: 0, function: { arguments: '"Paris"}' } }]);
    expect(calls.chatDelta(undefined)).toBe(false);
    expect(calls.markdown()).toBe(
      '\n\n**Tool call:** `get_weather`\n\n```json\n{\n  "city": "Paris"\n}\n```\n',
    );
  });

  it('gathers Messages tool_use blocks; arguments cut short are shown as they came', () => {
    const calls = new ToolCalls();
    expect(
      calls.messagesEvent({ type: 'content_block_start', content_block: { type: 'text', text: '' } }),
    ).toBe(false);
    calls.messagesEvent({
      type: 'content_block_start',
      content_block: { type: 'tool_use', name: 'get_weather' },
    });
    calls.messagesEvent({
      type: 'content_block_delta',
      delta: { type: 'input_json_delta', partial_json: '{"ci' },
    });
    expect(calls.markdown()).toContain('```json\n{"ci\n```');
  });
});

describe('tools are offered only to a model that calls them', () => {
  it('drops the tools text for a model without the capability, keeps it for one with it', async () => {
    const { limitsFor, withinLimits } = await import('./params.ts');
    const model = (tools: boolean) =>
      ({
        capabilities: { tools, vision: false, reasoning: false, edit: false, imageToVideo: false },
      }) as Parameters<typeof limitsFor>[0];
    const p = { ...DEFAULT_PARAMS, tools: JSON.stringify([weather]) };
    expect(withinLimits(p, limitsFor(model(false), 'chat')).tools).toBe('');
    expect(paramFields(withinLimits(p, limitsFor(model(false), 'chat')), 'chat')).not.toHaveProperty('tools');
    expect(withinLimits(p, limitsFor(model(true), 'messages')).tools).toBe(p.tools);
  });
});

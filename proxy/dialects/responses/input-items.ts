// GET /v1/responses/{id}/input_items: the items a stored response was generated from (the earlier
// turns its previous_response_id chain carried, then its own input), as OpenAI's ResponseItem
// variants, one cursor page at a time. Pure: the route reads the stored conversation
// (../../calls/response-store.ts) and hands it here.
//
// Input items are kept as the client sent them (they are fed back to the engine as they are), so
// most have no id; OpenAI's list gives every item one, and `after` pages by it. An item without
// one is named from its response and position, so the same item has the same id on every page.
import type { ResponsesItem, ResponsesMessage } from '../../schemas/responses.ts';

export interface InputItemsQuery {
  limit: number;
  order: 'asc' | 'desc';
  /** An item id: the page starts after it (in `order`). */
  after?: string | undefined;
}

export interface InputItemsPage {
  object: 'list';
  data: Record<string, unknown>[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

const PREFIXES: Record<string, string> = {
  function_call: 'fc',
  function_call_output: 'fco',
  custom_tool_call: 'ctc',
  custom_tool_call_output: 'ctco',
  reasoning: 'rs',
  additional_tools: 'at',
};

/** The id of the item at `index` of a response's conversation when it was sent without one. */
function positionalId(responseId: string, type: string, index: number): string {
  const prefix = PREFIXES[type] ?? 'msg';
  return `${prefix}_${responseId.slice('resp_'.length)}${index.toString(16).padStart(4, '0')}`;
}

type Part = ResponsesMessage['content'];

/** A message's content as OpenAI lists it: parts, never a bare string; output text with its arrays. */
function partsOf(content: Part, role: string): Record<string, unknown>[] {
  if (typeof content === 'string')
    return [
      role === 'assistant'
        ? { type: 'output_text', text: content, annotations: [], logprobs: [] }
        : { type: 'input_text', text: content },
    ];
  return content.map((p) => {
    if (p.type === 'output_text')
      return {
        type: 'output_text',
        text: p.text,
        annotations: p.annotations ?? [],
        logprobs: p.logprobs ?? [],
      };
    if (p.type === 'input_image')
      return {
        type: 'input_image',
        image_url: p.image_url ?? null,
        file_id: null,
        detail: p.detail ?? 'auto',
      };
    return { ...p };
  });
}

/** One stored input item as the ResponseItem variant OpenAI lists for it. */
export function listedItem(item: ResponsesItem, id: string): Record<string, unknown> {
  if (!('type' in item) || item.type === undefined || item.type === 'message') {
    const m = item as ResponsesMessage;
    return {
      id,
      type: 'message',
      role: m.role,
      status: 'completed',
      content: partsOf(m.content, m.role),
    };
  }
  switch (item.type) {
    case 'function_call':
      return {
        id,
        type: 'function_call',
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
        status: 'completed',
        ...(item.namespace !== undefined ? { namespace: item.namespace } : {}),
      };
    case 'custom_tool_call':
      return {
        id,
        type: 'custom_tool_call',
        call_id: item.call_id,
        name: item.name,
        input: item.input,
        ...(item.namespace !== undefined ? { namespace: item.namespace } : {}),
      };
    case 'additional_tools':
      return { id, type: 'additional_tools', role: item.role, tools: item.tools };
    case 'function_call_output':
    case 'custom_tool_call_output':
      return {
        id,
        type: item.type,
        call_id: item.call_id,
        output: item.output,
        status: 'completed',
      };
    case 'reasoning':
      return {
        id,
        type: 'reasoning',
        summary: item.summary,
        ...(item.content != null ? { content: item.content } : {}),
        ...(item.encrypted_content != null ? { encrypted_content: item.encrypted_content } : {}),
      };
  }
}

/**
 * One page of a response's input items. `items` is its whole stored conversation; the last
 * `outputCount` are its output, not input. Null when `after` names no item of it.
 */
export function inputItemsPage(
  responseId: string,
  items: readonly ResponsesItem[],
  outputCount: number,
  q: InputItemsQuery,
): InputItemsPage | null {
  const input = items.slice(0, Math.max(0, items.length - outputCount));
  const listed = input.map((item, i) => {
    const own = (item as { id?: unknown }).id;
    const type = (item as { type?: string }).type ?? 'message';
    return listedItem(item, typeof own === 'string' && own !== '' ? own : positionalId(responseId, type, i));
  });
  if (q.order === 'desc') listed.reverse();
  let from = 0;
  if (q.after !== undefined) {
    const at = listed.findIndex((item) => item.id === q.after);
    if (at === -1) return null;
    from = at + 1;
  }
  const data = listed.slice(from, from + q.limit);
  return {
    object: 'list',
    data,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
    has_more: from + q.limit < listed.length,
  };
}

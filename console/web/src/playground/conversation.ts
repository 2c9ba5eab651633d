// The Run tab's conversation (issue 37 item 2): its messages, each reply with what its own call
// measured and cost, the edits a person makes to it (regenerate, edit, delete), and its keeping in
// this browser's localStorage across reloads. One conversation per account: the model, dialect and
// parameters are kept with it, never a key or its secret (they are not part of it at all).
import type { ChatMessage, Dialect, RunMetrics } from './calls.ts';
import type { Cost } from './Metrics.tsx';
import { DEFAULT_PARAMS, type SamplingParams } from './params.ts';

/** A message as the thread shows it: a reply carries its call's measurements and cost. */
export interface ThreadMessage extends ChatMessage {
  metrics?: RunMetrics;
  cost?: Cost | null;
  /** The reply was stopped part-way (what was generated is billed). */
  stopped?: boolean;
}

export interface Conversation {
  model: string;
  dialect: Dialect;
  system: string;
  params: SamplingParams;
  messages: ThreadMessage[];
}

export const emptyConversation = (model = ''): Conversation => ({
  model,
  dialect: 'chat',
  system: '',
  params: DEFAULT_PARAMS,
  messages: [],
});

/** The messages a call is made of: role and text only (the measurements stay in the page). */
export const callMessages = (ms: readonly ThreadMessage[]): ChatMessage[] =>
  ms.map((m) => ({ role: m.role, content: m.content }));

/**
 * Regenerate the reply at `i`: the conversation up to the user message it answered, which is run
 * again. Null when `i` is not a reply.
 */
export function beforeReply(ms: readonly ThreadMessage[], i: number): ThreadMessage[] | null {
  if (ms[i]?.role !== 'assistant') return null;
  return ms.slice(0, i);
}

/** Edit the user message at `i`: everything after it goes (it answered the old text). */
export function editedAt(ms: readonly ThreadMessage[], i: number, content: string): ThreadMessage[] {
  return [...ms.slice(0, i), { role: 'user', content }];
}

/** Delete the user message at `i` and the reply that answered it, if one did. */
export function deletedAt(ms: readonly ThreadMessage[], i: number): ThreadMessage[] {
  const answered = ms[i + 1]?.role === 'assistant' ? 2 : 1;
  return [...ms.slice(0, i), ...ms.slice(i + answered)];
}

export const storageKey = (accountId: string) => `modelplane.playground.run.${accountId}`;

/** The kept conversation, or null when there is none (or it cannot be read: it is then dropped). */
export function loadConversation(storage: Storage, accountId: string): Conversation | null {
  const text = storage.getItem(storageKey(accountId));
  if (text === null) return null;
  try {
    const c = JSON.parse(text) as Partial<Conversation>;
    if (!Array.isArray(c.messages)) return null;
    return {
      model: typeof c.model === 'string' ? c.model : '',
      dialect: c.dialect === 'messages' ? 'messages' : 'chat',
      system: typeof c.system === 'string' ? c.system : '',
      params: { ...DEFAULT_PARAMS, ...(c.params ?? {}) },
      messages: c.messages.filter(
        (m): m is ThreadMessage =>
          (m?.role === 'user' || m?.role === 'assistant') && typeof m.content === 'string',
      ),
    };
  } catch {
    storage.removeItem(storageKey(accountId));
    return null;
  }
}

export function saveConversation(storage: Storage, accountId: string, c: Conversation): void {
  try {
    storage.setItem(storageKey(accountId), JSON.stringify(c));
  } catch {
    // Storage full or refused (private mode): the conversation lives on in the page until reload.
  }
}

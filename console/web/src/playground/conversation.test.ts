import { describe, expect, it } from 'vitest';
import { memoryStorage } from '../../../../test/helpers/memory-storage.ts';
import {
  beforeReply,
  deletedAt,
  editedAt,
  emptyConversation,
  loadConversation,
  saveConversation,
  storageKey,
  type ThreadMessage,
} from './conversation.ts';

const thread: ThreadMessage[] = [
  { role: 'user', content: 'one' },
  { role: 'assistant', content: 'reply one' },
  { role: 'user', content: 'two' },
  { role: 'assistant', content: 'reply two' },
];

describe('editing a conversation', () => {
  it('regenerate runs again the conversation up to the reply; only a reply can be regenerated', () => {
    expect(beforeReply(thread, 3)).toEqual(thread.slice(0, 3));
    expect(beforeReply(thread, 1)).toEqual(thread.slice(0, 1));
    expect(beforeReply(thread, 2)).toBeNull();
  });
  it('an edited message drops what came after it', () => {
    expect(editedAt(thread, 0, 'uno')).toEqual([{ role: 'user', content: 'uno' }]);
    expect(editedAt(thread, 2, 'dos')).toEqual([...thread.slice(0, 2), { role: 'user', content: 'dos' }]);
  });
  it('deleting a message deletes the reply to it', () => {
    expect(deletedAt(thread, 0)).toEqual(thread.slice(2));
    expect(deletedAt(thread.slice(0, 3), 2)).toEqual(thread.slice(0, 2));
  });
});

describe('keeping it across reloads', () => {
  it('saved and loaded per account', () => {
    const s = memoryStorage();
    const c = { ...emptyConversation('M'), system: 'terse', messages: thread };
    saveConversation(s, 'acct-1', c);
    expect(loadConversation(s, 'acct-1')).toEqual(c);
    expect(loadConversation(s, 'acct-2')).toBeNull();
  });
  it('what cannot be read is dropped, not thrown', () => {
    const s = memoryStorage();
    s.setItem(storageKey('a'), '{not json');
    expect(loadConversation(s, 'a')).toBeNull();
    expect(s.getItem(storageKey('a'))).toBeNull();
    s.setItem(storageKey('b'), JSON.stringify({ messages: [{ role: 'tool', content: 'x' }, thread[0]] }));
    expect(loadConversation(s, 'b')?.messages).toEqual([thread[0]]);
  });
});

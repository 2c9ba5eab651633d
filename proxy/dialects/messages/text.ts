// The Messages dialect of a text call (../translator.ts TextDialect, MSG-1..9): the engine's chat
// completion is parsed once and mapped to a message (./response.ts) carrying the usage billed;
// a stream is translated event by event (./stream.ts) and pings while the engine is silent.

import { readCompletionObject } from '../completion-object.ts';
import { outputBytesOf } from '../openai/completion.ts';
import type { TextDialect } from '../translator.ts';
import { messageId, toMessage } from './response.ts';
import { MessagesStream, MessagesTranslator } from './stream.ts';

type Completion = Parameters<typeof toMessage>[0];

export function messagesDialect(o: {
  model: string;
  stopSequences: readonly string[] | undefined;
  /** The prompt's input tokens as the proxy estimates them (an early message_start). */
  estimateInput: () => number;
}): TextDialect<Completion> {
  const id = messageId();
  return {
    read: (bytes) => readCompletionObject<Completion>(bytes),
    outputBytes: (answer) => outputBytesOf(answer as Parameters<typeof outputBytesOf>[0]),
    send: (reply, answer, usage, cost) => {
      const message = toMessage(answer, { id, model: o.model, usage, cost, stopSequences: o.stopSequences });
      reply.type('application/json').send(JSON.stringify(message));
    },
    translator: () =>
      new MessagesTranslator(new MessagesStream({ id, model: o.model, stopSequences: o.stopSequences })),
    estimateInput: o.estimateInput,
  };
}

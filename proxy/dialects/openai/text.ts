// The chat-completions dialect of a text call (../translator.ts TextDialect, CHAT-1..4): the
// engine's JSON passed through with the model echoed canonical (./completion.ts), and its stream
// relayed frame by frame (./stream.ts).
import type { CatalogueEntry } from '../../../core/catalogue/index.ts';
import {
  type CompletionOut,
  completionFast,
  completionSlow,
  modelFieldsOf,
} from '../../engine/frames/index.ts';
import type { TextDialect } from '../translator.ts';
import { completionOutputBytes, withCost } from './completion.ts';
import { ChatStream } from './stream.ts';

export function chatDialect(
  entry: CatalogueEntry,
  streamOptions:
    | { include_usage?: boolean | null; continuous_usage_stats?: boolean | null }
    | null
    | undefined,
): TextDialect<CompletionOut> {
  const engineModel = entry.servedName ?? entry.id;
  return {
    read: (bytes) => {
      const out =
        completionFast(bytes, modelFieldsOf(entry.id, engineModel)) ?? completionSlow(bytes, entry.id);
      return { answer: out, usage: out.usage };
    },
    outputBytes: (answer) => completionOutputBytes(answer.body),
    send: (reply, answer, usage, cost) => {
      reply.type('application/json').send(withCost(answer, cost, usage));
    },
    translator: () => {
      const includeUsage = streamOptions?.include_usage === true;
      return new ChatStream(
        {
          model: entry.id,
          includeUsage,
          continuousUsage: includeUsage && streamOptions?.continuous_usage_stats === true,
        },
        engineModel,
      );
    },
  };
}

// The Responses dialect of a text call (../translator.ts TextDialect): the engine's chat
// completion is parsed once and mapped to a response (./response.ts, written as JSON by
// ./response-json.ts) carrying the usage billed; a stream is translated event by event
// (./stream.ts). `done` receives every finished response, as the JSON sent (the route keeps it
// when the request asked to store it).
import { readCompletionObject } from '../completion-object.ts';
import { outputBytesOf } from '../openai/completion.ts';
import type { TextDialect } from '../translator.ts';
import { type Echo, outputOf } from './response.ts';
import { ResponseJson } from './response-json.ts';
import { type FinishedResponse, ResponsesStream, ResponsesTranslator } from './stream.ts';

type Completion = Parameters<typeof outputOf>[0];

export function responsesDialect(
  echo: Echo,
  /** Given every finished response, when it is to be kept (null: it is not, nothing is made for it). */
  done: ((response: FinishedResponse) => void) | null,
): TextDialect<Completion> {
  return {
    read: (bytes) => readCompletionObject<Completion>(bytes),
    outputBytes: (answer) => outputBytesOf(answer as Parameters<typeof outputBytesOf>[0]),
    send: (reply, answer, usage, cost) => {
      const { output, status } = outputOf(answer, echo);
      const json = new ResponseJson(echo).render(status, output, usage, null, cost);
      done?.({ json, output: JSON.stringify(output), status });
      reply.type('application/json').send(json);
    },
    translator: () => new ResponsesTranslator(new ResponsesStream(echo), done),
  };
}
